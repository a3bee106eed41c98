"""Tests of the efficiency tests: each module of `tests/evidence/cost/` fails exactly the
efficiency tests of the families it names in `CAUGHT_BY`, each failure naming its cost
(`NAMED`), and passes every test of what it computes (or those its `CORRECT_ON` names, as
`-k` does, where the rest would take minutes at its cost); the efficient ones in other
styles (a pool of processes, a chunked stream) fail none. Marked `meta`, run by `make
meta`; marked `extended` too, which CI leaves out (`make meta CI_SCOPE=1`): each module's
runs time real work, 100 s of CPU on two busy cores, and a run in a process where other
modules ran before once measured another tokenizer than its own (docs/maintaining.md,
"CI")."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from cs336_harness.families import BY_NAME
from cs336_harness.judging.case_layout import COST, case_table
from cs336_harness.judging.pytest_plugin import DEFAULT_FIXTURES
from tests.meta.test_meta import (
    CORRECTNESS,
    TESTS,
    adapter_uses,
    failing_families,
    files_to_run,
    run_suite,
)

pytestmark = pytest.mark.extended

COST_MODULES = sorted(
    p for p in (TESTS / "evidence" / "cost").glob("*.py") if not p.name.startswith("_")
)


def _module(path: Path):
    return importlib.import_module(f"tests.evidence.cost.{path.stem}")


@pytest.mark.parametrize("path", COST_MODULES, ids=[p.stem for p in COST_MODULES])
def test_cost_module_is_caught_by_its_efficiency_tests_alone(pytester, path):
    module = _module(path)
    files = files_to_run(module, adapter_uses(pytester))
    reports = run_suite(pytester, path, files, "efficiency")
    assert reports, f"{path.stem}: no efficiency test looks up an adapter it defines"
    assert failing_families(reports) == module.CAUGHT_BY
    for report in reports:
        if report.failed:
            assert module.NAMED in report.longreprtext, (
                f"{path.stem}: {report.nodeid} does not say {module.NAMED!r}: "
                f"{report.longreprtext[:400]}"
            )
    if module.CAUGHT_BY:  # slow but correct: what it computes passes
        # Those tests alone that its module names, where the whole family would take minutes.
        keyword = getattr(module, "CORRECT_ON", "")
        reports = run_suite(pytester, path, files, CORRECTNESS, keyword)
        wrong = [r.nodeid for r in reports if r.failed]
        assert not wrong, f"{path.stem} is meant to be correct, and fails {wrong}"


def test_every_family_with_cost_cases_is_caught_by_some_cost_module():
    """Every efficiency test can fail: some cost module names its family."""
    costed = {
        family
        for family, entries in case_table(DEFAULT_FIXTURES).items()
        if any(entry["params"].get(COST) for entry in entries)
    }
    assert costed <= set(BY_NAME)
    caught = frozenset().union(*(_module(p).CAUGHT_BY for p in COST_MODULES))
    assert costed - caught == set(), f"no cost module fails {sorted(costed - caught)}"
