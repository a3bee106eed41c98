"""The assignment's rules. The static scan: every route to a forbidden definition that a
reading can follow is found, with its line; the bundled implementation has none. The
watcher at run time: what the submission's own frames call, named as the scan names it,
including what no reading follows; nothing the harness calls."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from cs336_harness.paths import REPO_ROOT
from cs336_harness.rules.policy import DEFAULT, Policy
from cs336_harness.rules.runtime import MAX_SITES, TAKEN, Watcher, handing_over
from cs336_harness.rules.static_scan import scan_source, scan_submission


def names(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.name) for f in scan_source(source.encode(), "x.py")]


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import torch\ny = torch.nn.functional.silu(x)", [(2, "torch.nn.functional.silu")]),
        ("import torch.nn.functional as F\nF.gelu(x)", [(2, "torch.nn.functional.gelu")]),
        (
            "from torch.nn import functional as F\nF.softmax(x, -1)",
            [(2, "torch.nn.functional.softmax")],
        ),
        (
            "from torch import nn\nclass L(nn.Module):\n    pass\nnn.Linear(2, 3)",
            [(4, "torch.nn.Linear")],
        ),
        ("from torch.nn import Linear\nLinear(2, 3)", [(1, "torch.nn.Linear")]),
        ("import torch\nlin = torch.nn.Linear\nlin(2, 3)", [(2, "torch.nn.Linear")]),
        ("from torch import nn\ngetattr(nn, 'Embedding')(3, 4)", [(2, "torch.nn.Embedding")]),
        (
            "import torch\ntorch.nn.utils.clip_grad_norm_(p, 1.0)",
            [(2, "torch.nn.utils.clip_grad_norm_")],
        ),
        ("import torch\nopt = torch.optim.AdamW(p)", [(2, "torch.optim.AdamW")]),
        ("import torch as t\nclass A(t.optim.Optimizer):\n    pass", []),
        ("import torch\ntorch.nn.init.trunc_normal_(w)\ntorch.nn.Parameter(w)", []),
        ("from torch import nn\nnn.ModuleList([])\nnn.Sequential()\nnn.ParameterDict()", []),
        ("import torch\ntorch.softmax(x, -1)\nx.softmax(-1)", []),  # not in torch.nn
        ("nn = object()\nnn.Linear", []),  # not bound to torch
        ("from . import nn\nnn.Linear", []),  # the submission's own module
    ],
)
def test_every_followed_route_to_a_forbidden_definition_is_found(source, found):
    assert names(source) == found


def test_the_bundled_implementation_breaks_no_rule():
    assert scan_submission(REPO_ROOT) == ([], [])


def test_the_fused_adapters_show_each_fused_op_they_use():
    source = (REPO_ROOT / "tests" / "evidence" / "fused.py").read_bytes()
    used = {f.name for f in scan_source(source, "tests/evidence/fused.py")}
    assert {
        "torch.nn.functional.scaled_dot_product_attention",
        "torch.nn.functional.silu",
        "torch.nn.functional.rms_norm",
        "torch.nn.functional.cross_entropy",
        "torch.nn.Linear",
        "torch.nn.Embedding",
        "torch.optim.AdamW",
    } <= used
    assert not [name for name in used if not DEFAULT.forbids(name)]


def test_a_file_that_cannot_be_parsed_is_reported_not_skipped(tmp_path):
    (tmp_path / "cs336_basics").mkdir()
    (tmp_path / "cs336_basics" / "broken.py").write_text("def f(:\n")
    (tmp_path / "cs336_basics" / "deep.py").write_text("x = " + "(" * 10_000 + ")" * 10_000)
    (tmp_path / "cs336_basics" / "long.py").write_text("import torch\nx = torch" + ".a" * 100_000)
    findings, unscanned = scan_submission(tmp_path)
    assert findings == []
    assert {(u.path, u.reason) for u in unscanned} == {
        ("cs336_basics/broken.py", "SyntaxError"),
        ("cs336_basics/deep.py", "SyntaxError"),  # too many nested parentheses
        ("cs336_basics/long.py", "RecursionError"),  # the parser's own limit
    }


# -- at run time ---------------------------------------------------------------------------


def _submission(tmp_path: Path, source: str) -> dict[str, Any]:
    """The namespace of `source` run as the submission's `cs336_basics/code.py`."""
    path = tmp_path / "cs336_basics" / "code.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(source))
    namespace: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def _watched(tmp_path: Path, run: Callable[[], object]) -> list[tuple[str, str, int]]:
    watcher = Watcher(tmp_path, tmp_path / "tests" / "adapters.py")
    with watcher:
        run()
    return sorted((name, path, line) for name, path, line, _ in watcher.take())


HIDDEN = """\
import torch


def attention(q, k, v):
    fused = getattr(torch.nn.functional, "scaled_" + "dot_product_attention")
    return fused(q, k, v)
"""


def test_a_call_no_reading_follows_is_seen_when_it_runs(tmp_path: Path):
    assert scan_source(HIDDEN.encode(), "cs336_basics/code.py") == []
    code = _submission(tmp_path, HIDDEN)
    x = torch.randn(2, 3, 4)
    assert _watched(tmp_path, lambda: code["attention"](x, x, x)) == [
        ("torch.nn.functional.scaled_dot_product_attention", "cs336_basics/code.py", 6)
    ]


FORBIDDEN_AND_ALLOWED = """\
import torch
from torch import nn


class Mine(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(3, 3))
        nn.init.trunc_normal_(self.weight)
        self.theirs = nn.Linear(3, 3)

    def forward(self, x):
        return self.theirs(x @ self.weight.T).softmax(-1)


def run(x, optimizer):
    y = Mine()(x)
    y.sum().backward()
    mine = torch.optim.AdamW([torch.nn.Parameter(x)])
    mine.step()
    return optimizer.state_dict()  # an optimizer the harness made: not the submission's use


def get_adamw_cls():
    return torch.optim.AdamW
"""


def test_modules_and_optimizers_are_named_by_their_class_and_allowed_ones_pass(tmp_path: Path):
    code = _submission(tmp_path, FORBIDDEN_AND_ALLOWED)
    theirs = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))])

    def run() -> None:
        code["run"](torch.randn(2, 3), theirs)
        handing_over(code["get_adamw_cls"])()  # a class handed to the harness

    assert _watched(tmp_path, run) == [
        ("torch.nn.Linear", "cs336_basics/code.py", 10),  # built
        ("torch.nn.Linear", "cs336_basics/code.py", 13),  # its forward
        ("torch.optim.AdamW", "cs336_basics/code.py", 19),  # built
        ("torch.optim.AdamW", "cs336_basics/code.py", 20),  # stepped
        ("torch.optim.AdamW", "cs336_basics/code.py", 24),  # handed over, at its `def`
    ]


def test_what_the_harness_calls_is_not_the_submissions(tmp_path: Path):
    _submission(tmp_path, "")
    x = torch.randn(2, 3)
    assert _watched(tmp_path, lambda: torch.nn.functional.silu(torch.nn.Linear(3, 3)(x))) == []


def test_the_sites_kept_are_bounded(tmp_path: Path):
    calls = "\n".join(f"torch.nn.functional.relu(x)  # {i}" for i in range(MAX_SITES + 50))
    code = _submission(tmp_path, "import torch\ndef run(x):\n" + textwrap.indent(calls, "    "))
    watcher = Watcher(tmp_path, tmp_path / "tests" / "adapters.py")
    with watcher:
        code["run"](torch.zeros(1))
    assert len(watcher.sites) == MAX_SITES
    assert len(watcher.take()) == TAKEN and not watcher.sites


def test_a_site_called_in_a_loop_is_counted_and_its_path_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    loop = (
        "import torch\ndef run(x):\n    for _ in range(100):\n        torch.nn.functional.relu(x)\n"
    )
    code = _submission(tmp_path, loop)
    made = []
    relpath = os.path.relpath
    monkeypatch.setattr(os.path, "relpath", lambda *args: made.append(args) or relpath(*args))
    watcher = Watcher(tmp_path, tmp_path / "tests" / "adapters.py")
    with watcher:
        code["run"](torch.zeros(1))
    assert watcher.take() == [["torch.nn.functional.relu", "cs336_basics/code.py", 4, 100]]
    assert len(made) == 1


def test_what_a_rubric_allows_is_not_recorded(tmp_path: Path):
    code = _submission(tmp_path, HIDDEN)
    x = torch.randn(2, 3, 4)
    allowed = (*DEFAULT.allowed, "torch.nn.functional.scaled_dot_product_attention")
    # As the grader hands the rubric's policy to the worker: on its command line.
    policy = Policy.from_json(Policy(allowed=allowed).to_json())
    watcher = Watcher(tmp_path, tmp_path / "tests" / "adapters.py", policy)
    with watcher:
        code["attention"](x, x, x)
    assert watcher.take() == []
