"""Student checkouts shaped as real ones are, for the tests that the harness and the grader
grade a submission on its own code, and fairly.

`write_wrong_package` writes a small checkout whose own `cs336_basics` is deliberately wrong
in softmax (every output zero) and right in SiLU, imported at the top of its adapters or
only inside the `run_*` functions, through another top-level module of the checkout, with
the upstream handout's `tests/common.py` imported both ways students write it (its own copy
at the top, the harness's where the lazy one has none), and beside
traps: a `cs336_staff` package and a `tests/conftest.py` of the checkout's own that raise if
the harness ever imports them. Graded on its own package, softmax fails and SiLU passes;
graded on this repository's, softmax would pass; on the handout's stubs, both would be "not
implemented".
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Literal

PACKAGE = '''
"""A student's package: SiLU right, softmax deliberately wrong."""
import torch


def silu(x):
    return x * torch.sigmoid(x)


def softmax(x, dim):
    return torch.zeros_like(x)  # the deliberate mistake: no softmax at all
'''
# Another top-level module of the checkout, which the adapters reach SiLU through.
HELPERS = '''
"""Helpers beside the package, imported by the adapters as `import helpers`."""
from cs336_basics import silu
'''
# What every variant's adapters hold: the handout's helpers, imported as students do.
COMMON_IMPORTS = """
from .common import gpt2_bytes_to_unicode
from tests.common import FIXTURES_PATH

assert gpt2_bytes_to_unicode()[ord(" ")] == "Ġ" and FIXTURES_PATH.name == "fixtures"
"""
LAZY = """
def run_silu(in_features):
    import helpers

    return helpers.silu(in_features)


def run_softmax(in_features, dim):
    from cs336_basics import softmax

    return softmax(in_features, dim)
"""
TOP = """
import helpers
from cs336_basics import softmax


def run_silu(in_features):
    return helpers.silu(in_features)


def run_softmax(in_features, dim):
    return softmax(in_features, dim)
"""
# The handout's `tests/common.py` as the top-level variant ships it (abridged); the lazy one
# ships none, and gets upstream's helpers from the harness.
OWN_COMMON = """
from pathlib import Path

FIXTURES_PATH = Path(__file__).resolve().parent / "fixtures"


def gpt2_bytes_to_unicode():
    return {32: "Ġ"}
"""
TRAP = """
raise RuntimeError("the harness imported the submission's {what}")
"""


def write_wrong_package(dest: Path, imports: Literal["lazy", "top"]) -> Path:
    """The checkout described above at `dest`; returns its adapters file."""
    files = {
        "cs336_basics/__init__.py": PACKAGE,
        "helpers.py": HELPERS,
        "tests/__init__.py": "",
        "tests/adapters.py": COMMON_IMPORTS + (LAZY if imports == "lazy" else TOP),
        "tests/conftest.py": TRAP.format(what="tests/conftest.py"),
        "cs336_staff/__init__.py": TRAP.format(what="cs336_staff"),
    }
    if imports == "top":
        files["tests/common.py"] = OWN_COMMON
    for name, text in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(textwrap.dedent(text).lstrip())
    return dest / "tests" / "adapters.py"
