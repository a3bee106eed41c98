"""Tests of the tests: every deliberately wrong adapters module in `tests/wrong_adapters/`
fails exactly the families it names in `CAUGHT_BY`, and both correct implementations (the
from-scratch default and the fused-op one) pass every family.

Each run is the whole component suite, in-process (pytester), so this costs about a second
per module; it is marked `meta` and run by `make meta`, outside the everyday suite.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
WRONG = sorted(p for p in (TESTS / "wrong_adapters").glob("*.py") if not p.name.startswith("_"))
CORRECT = [TESTS / "adapters.py", TESTS / "fused_adapters.py"]


@pytest.fixture(scope="module", autouse=True)
def _dynamo_imported_once():
    """pytester takes modules imported during an inline run out of `sys.modules` again
    afterwards. torch.optim's first call imports torch._dynamo, which imports triton, a
    native extension that aborts the process when imported a second time: so import it
    once here, outside every run."""
    import torch._dynamo  # noqa: F401


def failing_families(pytester: pytest.Pytester, adapters: Path) -> tuple[set[str], int]:
    """Run every family's tests against `adapters`; return the failing families and the count
    of tests that ran."""
    recorder = pytester.inline_run(
        str(TESTS),
        f"--adapters={adapters}",
        "-p",
        "no:cacheprovider",
        "-m",
        "not meta and not grading",
    )
    reports = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    errors = [
        r for r in recorder.getreports("pytest_runtest_logreport") if r.failed and r.when != "call"
    ]
    assert not errors, f"{adapters.name}: errors outside test bodies: {[r.nodeid for r in errors]}"
    failed = {dict(r.user_properties).get("family") for r in reports if r.failed}
    return failed, len(reports)


@pytest.mark.meta
@pytest.mark.parametrize("module", WRONG, ids=[p.stem for p in WRONG])
def test_wrong_module_is_caught_by_its_family(pytester, module):
    expected = importlib.import_module(f"tests.wrong_adapters.{module.stem}").CAUGHT_BY
    failed, ran = failing_families(pytester, module)
    assert ran > 0
    assert failed == expected, (
        f"{module.stem}: expected failures in {sorted(expected)}, got {sorted(failed)}"
    )


@pytest.mark.meta
@pytest.mark.parametrize("module", CORRECT, ids=[p.stem for p in CORRECT])
def test_correct_module_passes_every_family(pytester, module):
    failed, ran = failing_families(pytester, module)
    assert ran > 0
    assert failed == set(), f"{module.stem} fails {sorted(failed)}"
