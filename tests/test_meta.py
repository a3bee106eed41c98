"""Tests of the tests: every deliberately wrong adapters module in `tests/wrong_adapters/`
fails exactly the families it names in `CAUGHT_BY`, and both correct implementations (the
from-scratch default and the fused-op one) pass every family.

The diagnosis too: a wrong module's failures open with the line of the catalogued mistake
it names in `DIAGNOSED_AS` (an id, or a set of ids) and no other module's are blamed on a
mistake; every mistake in the catalog is proved by a wrong module in each of its families;
and no mistake's output matches a correct one on any stored case.

Each run is the whole component suite, in-process (pytester), so this costs about a second
per module; it is marked `meta` and run by `make meta`, outside the everyday suite.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from cs336_harness.adapter_loader import DEFAULT_ADAPTERS, Adapters
from cs336_harness.cases import load_case
from cs336_harness.diagnosis.catalog import BY_ID, MISTAKES
from cs336_harness.diagnosis.diagnose import NO_MATCH, LiveCatalog, usage
from cs336_harness.diagnosis.plugin import PROPERTY
from cs336_harness.error_margins import tolerance_test
from cs336_harness.pytest_plugin import fixtures_dir

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


def run_suite(pytester: pytest.Pytester, adapters: Path) -> list[pytest.TestReport]:
    """Run every family's tests against `adapters`; the reports of their calls."""
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
    return reports


def _family(report: pytest.TestReport) -> str | None:
    return dict(report.user_properties).get("family")


def failing_families(reports: list[pytest.TestReport]) -> set[str]:
    return {_family(r) for r in reports if r.failed}


def declared_mistakes(module) -> frozenset[str]:
    declared = getattr(module, "DIAGNOSED_AS", frozenset())
    return frozenset({declared}) if isinstance(declared, str) else frozenset(declared)


def check_diagnoses(
    stem: str, reports: list[pytest.TestReport], declared: frozenset[str], live: LiveCatalog
):
    """Each diagnosed failure (a wrong value of a forward output) of a family that a declared
    mistake covers opens with that mistake's line, unless the catalog cannot compute that
    mistake on the case; elsewhere it says no known mistake matches; and each declared
    mistake opens a failure in every family it covers that the module fails."""
    covered = {family for m in declared for family in BY_ID[m].variants}
    opened: set[tuple[str, str]] = set()
    for report in reports:
        diagnosis = dict(report.user_properties).get(PROPERTY)
        if not report.failed or diagnosis is None:
            continue
        ids = [] if diagnosis == "none" else diagnosis.split(",")
        first = report.longreprtext.splitlines()[0]
        where = f"{stem}: {report.nodeid}"
        if _family(report) not in covered:
            assert not ids, f"{where}: diagnosed as {ids}, a mistake it does not make"
            assert first.startswith(NO_MATCH), f"{where}: opens with {first!r}"
            continue
        case_id = report.nodeid.rpartition("[")[2].removesuffix("]")
        computable = {c.mistake for c in live.candidates(_family(report), case_id) or []}
        if not ids and not declared & computable:
            continue
        assert ids, f"{where}: no known mistake matches; expected one of {sorted(declared)}"
        assert ids[0] in declared, f"{where}: diagnosed as {ids}, expected {sorted(declared)}"
        assert first == BY_ID[ids[0]].line, f"{where}: opens with {first!r}"
        opened.add((ids[0], _family(report)))
    failed = failing_families(reports)
    missing = {(m, f) for m in declared for f in BY_ID[m].variants if f in failed} - opened
    assert not missing, f"{stem}: no failure diagnosed as (mistake, family) {sorted(missing)}"


@pytest.mark.meta
@pytest.mark.parametrize("module", WRONG, ids=[p.stem for p in WRONG])
def test_wrong_module_is_caught_by_its_family(pytester, request, module):
    wrong = importlib.import_module(f"tests.wrong_adapters.{module.stem}")
    reports = run_suite(pytester, module)
    assert reports
    failed = failing_families(reports)
    assert failed == wrong.CAUGHT_BY, (
        f"{module.stem}: expected failures in {sorted(wrong.CAUGHT_BY)}, got {sorted(failed)}"
    )
    live = LiveCatalog(fixtures_dir(request.config))
    check_diagnoses(module.stem, reports, declared_mistakes(wrong), live)


@pytest.mark.meta
@pytest.mark.parametrize("module", CORRECT, ids=[p.stem for p in CORRECT])
def test_correct_module_passes_every_family(pytester, module):
    reports = run_suite(pytester, module)
    assert reports
    failed = failing_families(reports)
    assert failed == set(), f"{module.stem} fails {sorted(failed)}"


@pytest.mark.meta
def test_every_mistake_is_proved_by_a_wrong_module():
    """Each (mistake, family) of the catalog is declared by a wrong module caught by that
    family, whose run then shows it diagnosed there (`check_diagnoses`)."""
    proved: set[tuple[str, str]] = set()
    for path in WRONG:
        module = importlib.import_module(f"tests.wrong_adapters.{path.stem}")
        for mistake in declared_mistakes(module):
            assert mistake in BY_ID, f"{path.stem}: DIAGNOSED_AS names no mistake {mistake!r}"
            proved |= {(mistake, family) for family in module.CAUGHT_BY}
    unproved = {(m.id, f) for m in MISTAKES for f in m.variants} - proved
    assert not unproved, f"(mistake, family) without a wrong module: {sorted(unproved)}"


def _comparison(family: str, case, adapters: Adapters) -> tuple[np.ndarray, float, float]:
    """The expected output and tolerance the family's test compares a correct output with."""
    test = tolerance_test(family)
    seen = []

    def record(actual, expected, *, dtype, rtol, atol, what="output"):
        seen.append((expected.double().numpy(), rtol, atol))

    with mock.patch.object(
        importlib.import_module(test.__module__), "assert_matches_oracle", record
    ):
        test(case, adapters)
    return seen[0]


@pytest.mark.meta
def test_no_known_mistake_matches_a_correct_output(request):
    """On every stored forward case, each mistake's output has the expected output's shape
    and differs from it by more than the test's tolerance (graded mistakes, whose effect
    shrinks with the data, only where they can show): a correct output is never diagnosed,
    and a mistake that can show on a case does (the sweep checks fresh draws)."""
    fixtures = fixtures_dir(request.config)
    live = LiveCatalog(fixtures)
    adapters = Adapters(str(DEFAULT_ADAPTERS))
    checked = 0
    for family, entry in live.forward_cases():
        case = load_case(fixtures, family, entry)
        expected, rtol, atol = _comparison(family, case, adapters)
        candidates = live.candidates(family, case.id)
        for candidate in candidates:
            assert candidate.shape == expected.shape, (
                f"{family}/{case.id}: {candidate.mistake} has shape {candidate.shape}"
            )
        found = [
            c.mistake for c in candidates if usage(expected, c, rtol, atol) <= 1.0 and not c.graded
        ]
        assert not found, f"{family}/{case.id}: the correct output matches {found}"
        checked += len(candidates)
    assert checked >= len(MISTAKES)
