"""`uv run pytest --adapters=their/tests/adapters.py` grades the student's own package.

Run as a student runs it: pytest in this repository, whose own `cs336_basics` (the
reference, right) and `tests` package are there to be found, on a checkout whose package is
deliberately wrong in softmax (`tests/grading/real_world.py`). Softmax must fail, on its
output, and SiLU pass, whether the adapters import the package at the top or only inside
the `run_*` functions (the version before `cs336_harness/adapters/submission_imports.py` graded the
lazy ones on this repository's softmax, which passed); the checkout's own `cs336_staff` and
`tests/conftest.py`, which raise, are never imported; and a process the submission starts
by spawn finds its package too. Each run is a fresh process (seconds), as the module
finders and `sys.path` it checks belong to the process; marked `meta` by its folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cs336_harness.paths import REPO_ROOT
from tests.grading.real_world import write_wrong_package

FILES = ["tests/families/test_softmax.py", "tests/families/test_silu.py"]
# Appended to the lazy checkout's adapters: at import, a spawned process reports where
# `cs336_basics` comes from for it (it imports by sys.path alone, without the finder).
SPAWNS = """
import multiprocessing
from pathlib import Path

import helpers

with multiprocessing.get_context("spawn").Pool(1) as _pool:
    _spawned = Path(_pool.apply(helpers.package_file))
assert _spawned.is_relative_to(Path(__file__).resolve().parents[1]), _spawned
"""
PACKAGE_FILE = """
def package_file():
    import cs336_basics

    return cs336_basics.__file__
"""


def _pytest(adapters: Path, via_environment: bool) -> subprocess.CompletedProcess[str]:
    option = [] if via_environment else [f"--adapters={adapters}"]
    env = os.environ | ({"CS336_ADAPTERS": str(adapters)} if via_environment else {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", *FILES, *option, "-p", "no:cacheprovider", "-q", "-rA"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("imports", ["lazy", "top"])
def test_the_students_own_package_is_graded(tmp_path: Path, imports: str):
    adapters = write_wrong_package(tmp_path, imports)  # type: ignore[arg-type]
    if imports == "lazy":
        (tmp_path / "helpers.py").write_text((tmp_path / "helpers.py").read_text() + PACKAGE_FILE)
        adapters.write_text(adapters.read_text() + SPAWNS)
    run = _pytest(adapters, via_environment=imports == "top")
    results = {name: outcome for outcome, name in re.findall(r"^(PASSED|FAILED) \S+::(\S+)",
                                                             run.stdout, re.M)}  # fmt: skip
    softmax = {n: r for n, r in results.items() if n.startswith("test_softmax")}
    silu = {n: r for n, r in results.items() if n.startswith("test_silu")}
    assert softmax and set(softmax.values()) == {"FAILED"}, run.stdout[-3000:]
    assert silu and set(silu.values()) == {"PASSED"}, run.stdout[-3000:]
    # Failed on their outputs (the diagnosis ran, reading the harness's catalog), not on an
    # import; nothing of the checkout's that is not its code was imported.
    assert "the submission's" not in run.stdout + run.stderr
    assert "ModuleNotFoundError" not in run.stdout and "ImportError" not in run.stdout
    assert re.search(r"likely cause|error shape", run.stdout), run.stdout[-3000:]
