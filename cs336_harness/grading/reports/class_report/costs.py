"""What the class's code costs, as data for the page and the summary: the known causes of a
cost the efficiency tests named, ranked by submissions as the mistakes are, and each
efficiency test's readings across the class, the slowest first."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from cs336_harness.cost.causes import CAUSES, CostCause
from cs336_harness.grading.reports.class_report.failure_text import quoted_line
from cs336_harness.grading.reports.class_report.findings import Example, Ref
from cs336_harness.grading.results import GradedTest, Status
from cs336_harness.grading.scoring import Score

# The slowest submissions listed per efficiency test.
SLOWEST = 10


@dataclass
class CauseGroup:
    """The submissions whose efficiency test of one family named one cause."""

    cause: CostCause
    family: str
    example: Example
    refs: list[Ref] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"c-{self.family}-{self.cause.id}"


@dataclass(frozen=True)
class Reading:
    ref: Ref
    # What the test measured as a fraction of its limit (1: the limit).
    fraction: float
    status: str


@dataclass(frozen=True)
class TestReadings:
    """One efficiency test across the class: every submission's reading, slowest first."""

    family: str
    test: str
    readings: tuple[Reading, ...]

    @property
    def over(self) -> int:
        return sum(r.status != Status.PASSED for r in self.readings)

    @property
    def slowest(self) -> tuple[Reading, ...]:
        return self.readings[:SLOWEST]


@dataclass(frozen=True)
class Costs:
    causes: tuple[CauseGroup, ...]
    tests: tuple[TestReadings, ...]

    @property
    def submissions(self) -> int:
        """How many submissions some efficiency test found too costly."""
        return len({r.ref for t in self.tests for r in t.readings if r.status != Status.PASSED})


def _efficiency(score: Score) -> list[GradedTest]:
    return [t for f in score.families for t in f.tests if t.efficiency]


def find(scores: list[Score]) -> Costs:
    causes: dict[tuple[str, str], CauseGroup] = {}
    readings: dict[tuple[str, str], list[Reading]] = defaultdict(list)
    for index, score in enumerate(scores):
        ref = Ref(index, score.submission.name)
        for test in _efficiency(score):
            if test.cost is not None:
                readings[test.family, test.name].append(Reading(ref, test.cost, test.status))
            cause = CAUSES.get(test.cost_cause)
            if cause is not None and test.status != Status.PASSED:
                example = Example(ref, test.name, quoted_line(test))
                group = CauseGroup(cause, test.family, example)
                causes.setdefault((test.family, cause.id), group).refs.append(ref)
    tests = tuple(
        TestReadings(family, name, tuple(sorted(rows, key=lambda r: (-r.fraction, r.ref.index))))
        for (family, name), rows in readings.items()
    )
    ranked = sorted(causes.values(), key=lambda g: (-len(g.refs), g.family, g.cause.id))
    return Costs(tuple(ranked), tests)
