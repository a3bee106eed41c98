"""No credit for doing nothing: implementations that compute nothing (`tests/evidence/
degenerate/`: inputs returned unchanged, zeros, ones, uniform or one-hot rows, optimizer
steps that change nothing, raising) score 0 in every family under partial credit.

Each runs the families' tests in-process (pytester), as in `tests/meta/test_meta.py`, and is
scored by the grader's own rule (`cs336_harness.grading.scoring.score`) with a rubric that
gives every family and the hardening entry a point. Every test such a module passes must be
marked `trivial` (its reason: how it passes), so a check that starts to pass by accident on
some draw (`make sweep` runs this file too) is found here, not in a student's grade. Marked
`meta`, run by `make meta`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cs336_harness.families import BY_NAME, FAMILIES
from cs336_harness.grading.results import CONTRACT, HARDENING, GradedTest, Status, SubmissionResult
from cs336_harness.grading.scoring import HARDENING_TITLE, FamilyPoints, Rubric, score

TESTS = Path(__file__).resolve().parent.parent
DEGENERATE = sorted(
    p for p in (TESTS / "evidence" / "degenerate").glob("*.py") if not p.name.startswith("_")
)
# A point for every family, those beyond upstream's handout and the hardening entry included.
EVERY_FAMILY = Rubric(
    families=tuple(FamilyPoints(f.name, f.title, 1.0) for f in FAMILIES),
    hardening=FamilyPoints(HARDENING, HARDENING_TITLE, 1.0),
)


class Collected:
    """A plugin that writes down each collected test's family, kind and `trivial` reason."""

    def __init__(self) -> None:
        self.tests: dict[str, tuple[str, str, str]] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            family = item.get_closest_marker("family")
            if family is None:
                continue
            trivial = item.get_closest_marker("trivial")
            self.tests[item.nodeid] = (
                family.args[0],
                HARDENING if item.get_closest_marker("hardening") else CONTRACT,
                str(trivial.args[0]) if trivial else "",
            )


def graded(pytester: pytest.Pytester, adapters: Path) -> SubmissionResult:
    """Every family's tests run on `adapters`, as the grader's verdicts."""
    collected = Collected()
    recorder = pytester.inline_run(
        str(TESTS / "families"),
        f"--adapters={adapters}",
        "-p",
        "no:cacheprovider",
        plugins=[collected],
    )
    passed = {
        r.nodeid
        for r in recorder.getreports("pytest_runtest_logreport")
        if r.when == "call" and r.passed
    }
    tests = tuple(
        GradedTest(
            nodeid,
            family,
            Status.PASSED if nodeid in passed else Status.FAILED,
            kind=kind,
            trivial=trivial,
        )
        for nodeid, (family, kind, trivial) in collected.tests.items()
    )
    assert tests, f"{adapters.name}: no test collected"
    return SubmissionResult(adapters.stem, adapters, tests, output="", wall_time=0.0, workers=1)


@pytest.mark.parametrize("adapters", DEGENERATE, ids=[p.stem for p in DEGENERATE])
def test_an_implementation_that_computes_nothing_scores_nothing(
    pytester: pytest.Pytester, adapters: Path
):
    result = graded(pytester, adapters)
    unmarked = [t.nodeid for t in result.tests if t.status == Status.PASSED and not t.trivial]
    assert not unmarked, (
        f"{adapters.stem} passes tests not marked trivial (mark them, with how it passes, or "
        f"make them tell it apart): {unmarked}"
    )
    scored = score(result, EVERY_FAMILY, partial=True)
    earning = {f.family: f.points for f in scored.families if f.points}
    assert scored.points == 0, f"{adapters.stem} earns points: {earning}"


def test_every_family_has_a_contract_test_that_is_not_trivial(pytester: pytest.Pytester):
    """Else a correct implementation could not earn that family's trivial tests either."""
    collected = Collected()
    pytester.inline_run(str(TESTS / "families"), "--collect-only", "-p", "no:cacheprovider",
                        plugins=[collected])  # fmt: skip
    telling = {
        f for f, kind, trivial in collected.tests.values() if kind == CONTRACT and not trivial
    }
    assert set(BY_NAME) <= telling, sorted(set(BY_NAME) - telling)
