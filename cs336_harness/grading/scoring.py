"""Points: a family earns its rubric points when all its tests pass (`partial`: pro rata)."""

from __future__ import annotations

from dataclasses import dataclass

from cs336_harness.grading.results import GradedTest, SubmissionResult
from cs336_harness.grading.rubric import Rubric
from cs336_harness.grading.status import Status, family_status


@dataclass(frozen=True)
class FamilyScore:
    family: str
    title: str
    tests: tuple[GradedTest, ...]
    points: float
    max_points: float
    status: Status
    in_rubric: bool

    @property
    def passed(self) -> int:
        return sum(t.status == Status.PASSED for t in self.tests)

    @property
    def first_problem(self) -> GradedTest | None:
        """The first test showing the family's verdict, whose message the table prints."""
        return next((t for t in self.tests if t.status == self.status != Status.PASSED), None)

    def test_points(self, test: GradedTest) -> tuple[float, float]:
        """(score, max) of one test: the family's points spread evenly over its tests."""
        share = self.max_points / len(self.tests)
        earned = test.status == Status.PASSED and self.points > 0
        return (share if earned else 0.0), share


@dataclass(frozen=True)
class Score:
    submission: SubmissionResult
    families: tuple[FamilyScore, ...]

    @property
    def points(self) -> float:
        return sum(f.points for f in self.families)

    @property
    def max_points(self) -> float:
        return sum(f.max_points for f in self.families)

    @property
    def percent(self) -> float:
        return 100.0 * self.points / self.max_points if self.max_points else 100.0


def _family_score(
    family: str, tests: list[GradedTest], rubric: Rubric, partial: bool
) -> FamilyScore:
    entry = rubric.get(family)
    max_points = entry.points if entry else 0.0
    passed = sum(t.status == Status.PASSED for t in tests)
    if partial:
        points = max_points * passed / len(tests)
    else:
        points = max_points if passed == len(tests) else 0.0
    return FamilyScore(
        family=family,
        title=entry.title if entry else family,
        tests=tuple(tests),
        points=points,
        max_points=max_points,
        status=family_status(t.status for t in tests),
        in_rubric=entry is not None,
    )


def score(submission: SubmissionResult, rubric: Rubric, partial: bool = False) -> Score:
    """Every family that has tests, in rubric order (families the rubric lacks last)."""
    by_family: dict[str, list[GradedTest]] = {}
    for test in submission.tests:
        by_family.setdefault(test.family, []).append(test)
    ordered = sorted(by_family, key=rubric.order)
    families = tuple(_family_score(f, by_family[f], rubric, partial) for f in ordered)
    return Score(submission, families)
