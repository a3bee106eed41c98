"""The rubric (`rubric.toml`) and points: what each family is worth and earned from its
contract tests, hardening apart, nothing for a test that doing nothing passes; the rubric's
`[rules]`, `[gradescope]` and `[policy]` (docs/grading.md, "Grading submissions", "Contract
and hardening" and "No credit for doing nothing")."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from cs336_harness.families import BY_NAME, FAMILIES
from cs336_harness.grading.environments.courses import COURSES, NEWEST, Course, from_table
from cs336_harness.grading.results import (
    HARDENING,
    GradedTest,
    Status,
    SubmissionResult,
    family_status,
)
from cs336_harness.paths import REPO_ROOT
from cs336_harness.rules.policy import DEFAULT as DEFAULT_POLICY
from cs336_harness.rules.policy import Policy

DEFAULT_RUBRIC = REPO_ROOT / "rubric.toml"
HARDENING_TITLE = "Hardening (behaviour this project chose where upstream is silent)"
# How the reports name a family the rubric leaves out.
BEYOND = "beyond the rubric"
# Gradescope's values (its autograder specification): who sees a result and when, and how
# it renders an output string.
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
OUTPUT_FORMATS = ("text", "ansi", "md", "html", "simple_format")
# `[scoring] credit`: per contract case (pro rata), or per family (all or nothing).
CREDITS = ("case", "family")
# `[classroom] runners`: GitHub Classroom's reporter gets a runner per family of the rubric,
# or one for the whole assignment (both beside one for the hardening tests).
FAMILY, ASSIGNMENT = "family", "assignment"
RUNNERS = (FAMILY, ASSIGNMENT)
# `[policy] late_penalty_per`: the late penalty is taken per started day or hour after the
# due date, or once.
LATE_UNITS = {"day": timedelta(days=1), "hour": timedelta(hours=1), "once": None}


class RubricError(ValueError):
    """The rubric file is missing or malformed; the grader cannot run without it."""


@dataclass(frozen=True)
class FamilyPoints:
    family: str
    title: str
    points: float
    # Of `points`, what its efficiency tests carry between them (the rest: its others).
    efficiency: float = 0.0


@dataclass(frozen=True)
class RulesEntry:
    """What breaking the assignment's rules costs, and the policy they are read with."""

    penalty: float = 0.0
    policy: Policy = DEFAULT_POLICY


@dataclass(frozen=True)
class Gradescope:
    """How Gradescope shows a submission's results (the rubric's `[gradescope]` table)."""

    visibility: str = "visible"
    # run_autograder's output (the grader's terminal table); students read results.json's.
    stdout_visibility: str = "hidden"
    output_format: str = "text"
    leaderboard: bool = False
    # Family (or "hardening") → the visibility of its tests, where it differs.
    family_visibility: dict[str, str] = field(default_factory=dict)

    def test_visibility(self, family: str) -> str:
        return self.family_visibility.get(family, self.visibility)


@dataclass(frozen=True)
class Classroom:
    """How GitHub Classroom's reporter gets the results (the rubric's `[classroom]` table)."""

    runners: str = FAMILY


@dataclass(frozen=True)
class SubmissionPolicy:
    """The course's submission policies on Gradescope (the rubric's `[policy]` table,
    applied by `submission_policy`)."""

    # Submissions that count in any `window_hours` (a rolling window); 0: no cap.
    max_submissions: int = 0
    window_hours: float = 24.0
    # The fraction of the score taken off per started `late_penalty_per` after the due
    # date, in all at most the whole score; 0: no penalty.
    late_penalty: float = 0.0
    late_penalty_per: str = "day"

    @property
    def capped(self) -> bool:
        return self.max_submissions > 0

    @property
    def active(self) -> bool:
        return self.capped or self.late_penalty > 0

    @property
    def window(self) -> timedelta:
        return timedelta(hours=self.window_hours)


@dataclass(frozen=True)
class Rubric:
    """Families in the rubric's order, which is also the order of every report; the
    hardening entry comes last."""

    families: tuple[FamilyPoints, ...]
    hardening: FamilyPoints = FamilyPoints(HARDENING, HARDENING_TITLE, 0.0)
    gradescope: Gradescope = Gradescope()
    rules: RulesEntry = RulesEntry()
    # Credit per contract case (pro rata) rather than all or nothing per family.
    partial: bool = True
    policy: SubmissionPolicy = SubmissionPolicy()
    # The environment submissions run in (`[environment]`; the newest course's by default).
    course: Course = COURSES[NEWEST]
    classroom: Classroom = Classroom()

    def get(self, family: str) -> FamilyPoints | None:
        if family == HARDENING:
            return self.hardening
        return next((f for f in self.families if f.family == family), None)

    def order(self, family: str) -> int:
        """Rubric position of `family`; families the rubric lacks, then hardening, last."""
        names = [f.family for f in self.families]
        if family == HARDENING:
            return len(names) + 1
        return names.index(family) if family in names else len(names)


def _entry(family: str, value: object) -> FamilyPoints:
    keys = {"points", "title", "efficiency"}
    if not isinstance(value, dict) or set(value) - keys or "points" not in value:
        raise RubricError(
            f"rubric entry {family!r} must be a table with `points` (and `title`, `efficiency`)"
        )
    points = value["points"]
    if isinstance(points, bool) or not isinstance(points, int | float) or points < 0:
        raise RubricError(f"rubric entry {family!r}: points must be a number ≥ 0, got {points!r}")
    registered = BY_NAME.get(family)
    default = registered.title if registered else family
    # The registry's share (upstream's weight of its efficiency test) of the points given.
    efficiency = value.get("efficiency", points * (registered.efficiency if registered else 0))
    inside = isinstance(efficiency, int | float) and not isinstance(efficiency, bool)
    if not inside or not 0 <= efficiency <= points:
        raise RubricError(
            f"rubric entry {family!r}: efficiency must be a number of points between 0 and its "
            f"points ({points!r}), got {efficiency!r}"
        )
    return FamilyPoints(family, str(value.get("title", default)), float(points), float(efficiency))


def _rules_entry(value: object) -> RulesEntry:
    if not isinstance(value, dict) or set(value) - {"penalty", "allowed"}:
        raise RubricError("the [rules] table takes only `penalty` and `allowed`")
    penalty = value.get("penalty", 0)
    if isinstance(penalty, bool) or not isinstance(penalty, int | float) or penalty < 0:
        raise RubricError(f"[rules] penalty must be a number ≥ 0, got {penalty!r}")
    allowed = value.get("allowed", [])
    if not isinstance(allowed, list) or not all(isinstance(a, str) and a for a in allowed):
        raise RubricError("[rules] allowed must be a list of qualified names, as torch.nn.GELU")
    policy = Policy(allowed=(*DEFAULT_POLICY.allowed, *allowed))
    return RulesEntry(float(penalty), policy)


def _choice(where: str, key: str, value: object, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise RubricError(f"{where}: {key} must be one of {', '.join(allowed)}; got {value!r}")
    return str(value)


def _gradescope(path: Path, table: object, families: set[str]) -> Gradescope:
    where, default = f"rubric {path}, [gradescope]", Gradescope()
    keys = ("visibility", "stdout_visibility", "output_format", "leaderboard", "family_visibility")
    if not isinstance(table, dict) or set(table) - set(keys):
        raise RubricError(f"{where} may hold only {', '.join(keys)}")
    leaderboard = table.get("leaderboard", default.leaderboard)
    if not isinstance(leaderboard, bool):
        raise RubricError(f"{where}: leaderboard must be true or false, got {leaderboard!r}")
    overrides = table.get("family_visibility", {})
    if not isinstance(overrides, dict):
        raise RubricError(f"{where}: family_visibility must be a table of family = visibility")
    unknown = sorted(set(overrides) - families - {HARDENING})
    if unknown:
        raise RubricError(
            f"{where}.family_visibility: {', '.join(map(repr, unknown))} is not a family of the "
            "rubric (nor 'hardening')"
        )

    def choice(key: str, allowed: tuple[str, ...]) -> str:
        return _choice(where, key, table.get(key, getattr(default, key)), allowed)

    return Gradescope(
        visibility=choice("visibility", VISIBILITIES),
        stdout_visibility=choice("stdout_visibility", VISIBILITIES),
        output_format=choice("output_format", OUTPUT_FORMATS),
        leaderboard=leaderboard,
        family_visibility={
            family: _choice(f"{where}.family_visibility", family, value, VISIBILITIES)
            for family, value in overrides.items()
        },
    )


def load_rubric(path: Path = DEFAULT_RUBRIC) -> Rubric:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise RubricError(f"cannot read the rubric {path}: {error}") from error
    tables = {"families", HARDENING, "gradescope", "classroom", "rules", "scoring", "policy",
              "environment"}  # fmt: skip
    unknown = sorted(set(data) - tables)
    if unknown:
        raise RubricError(
            f"rubric {path}: unknown {', '.join(map(repr, unknown))} (its tables are "
            "[families], [hardening], [scoring], [gradescope], [classroom], [rules], [policy] "
            "and [environment])"
        )
    # Without a [families] table, the registry's points for upstream's families; with one,
    # the course's table whole.
    upstream = {f.name: {"points": f.points} for f in FAMILIES if f.upstream}
    table = data.get("families", upstream)
    if not isinstance(table, dict) or not table:
        raise RubricError(f"rubric {path}: its [families] table gives no family points")
    if HARDENING in table:
        raise RubricError(f"rubric {path}: {HARDENING!r} is the [hardening] table's name")
    hardening = _entry(HARDENING, {"title": HARDENING_TITLE, "points": 0} | data.get(HARDENING, {}))
    gradescope = _gradescope(path, data.get("gradescope", {}), set(table))
    families = tuple(_entry(name, value) for name, value in table.items())
    rules = _rules_entry(data.get("rules", {}))
    partial = _partial(path, data.get("scoring", {}))
    policy = _policy(path, data.get("policy", {}))
    try:
        course = from_table(data.get("environment", {"course": NEWEST}), f"rubric {path}, "
                            "[environment]")  # fmt: skip
    except ValueError as error:
        raise RubricError(str(error)) from None
    classroom = _classroom(path, data.get("classroom", {}))
    return Rubric(families, hardening, gradescope, rules, partial, policy, course, classroom)


def _classroom(path: Path, table: object) -> Classroom:
    where = f"rubric {path}, [classroom]"
    if not isinstance(table, dict) or set(table) - {"runners"}:
        raise RubricError(f"{where} may hold only runners")
    return Classroom(_choice(where, "runners", table.get("runners", FAMILY), RUNNERS))


def _partial(path: Path, table: object) -> bool:
    """The `[scoring]` table's `credit`: whether a family is credited per case."""
    where = f"rubric {path}, [scoring]"
    if not isinstance(table, dict) or set(table) - {"credit"}:
        raise RubricError(f"{where} may hold only credit")
    return _choice(where, "credit", table.get("credit", "case"), CREDITS) == "case"


def _policy(path: Path, table: object) -> SubmissionPolicy:
    where, default = f"rubric {path}, [policy]", SubmissionPolicy()
    keys = ("max_submissions", "window_hours", "late_penalty", "late_penalty_per")
    if not isinstance(table, dict) or set(table) - set(keys):
        raise RubricError(f"{where} may hold only {', '.join(keys)}")

    def number(key: str, low: float, high: float | None = None) -> float:
        value = table.get(key, getattr(default, key))
        inside = isinstance(value, int | float) and not isinstance(value, bool)
        if not inside or not (low <= value and (high is None or value <= high)):
            bound = f"between {low:g} and {high:g}" if high is not None else f"≥ {low:g}"
            raise RubricError(f"{where}: {key} must be a number {bound}, got {value!r}")
        return value

    most = number("max_submissions", 0)
    if most != int(most):
        raise RubricError(f"{where}: max_submissions must be a whole number, got {most!r}")
    hours = number("window_hours", 0)
    if hours <= 0:
        raise RubricError(f"{where}: window_hours must be more than 0, got {hours!r}")
    per = table.get("late_penalty_per", default.late_penalty_per)
    return SubmissionPolicy(
        max_submissions=int(most),
        window_hours=float(hours),
        late_penalty=float(number("late_penalty", 0, 1)),
        late_penalty_per=_choice(where, "late_penalty_per", per, tuple(LATE_UNITS)),
    )


@dataclass(frozen=True)
class FamilyScore:
    family: str
    title: str
    tests: tuple[GradedTest, ...]
    points: float
    max_points: float
    status: Status
    in_rubric: bool
    # Passed trivial tests whose family had no other test passed: they earn nothing.
    uncounted: frozenset[str] = frozenset()
    # Of `max_points`, what its efficiency tests carry between them (none where it has none).
    efficiency_points: float = 0.0

    @property
    def passed(self) -> int:
        return sum(t.status == Status.PASSED for t in self.tests)

    def counts(self, test: GradedTest) -> bool:
        """Whether `test` earns its share: passed, and not a trivial pass standing alone."""
        return test.status == Status.PASSED and test.nodeid not in self.uncounted

    @property
    def first_problem(self) -> GradedTest | None:
        """The first test showing the family's verdict, whose message the table prints."""
        return next((t for t in self.tests if t.status == self.status != Status.PASSED), None)

    def test_points(self, test: GradedTest) -> tuple[float, float]:
        """(score, max) of one test: the efficiency points spread evenly over the efficiency
        tests, the family's other points over its other tests."""
        group = [t for t in self.tests if t.efficiency == test.efficiency]
        points = (
            self.efficiency_points if test.efficiency else self.max_points - self.efficiency_points
        )
        share = points / len(group)
        earned = self.counts(test) and self.points > 0
        return (share if earned else 0.0), share


@dataclass(frozen=True)
class Score:
    submission: SubmissionResult
    families: tuple[FamilyScore, ...]
    # Taken off for using what the assignment's rules forbid (the rubric's [rules] penalty).
    penalty: float = 0.0
    # Families the rubric leaves out that the submission implements at least in part: its
    # results there, hardening tests included, earning nothing (reported apart).
    beyond: tuple[FamilyScore, ...] = ()

    @property
    def points(self) -> float:
        return max(0.0, sum(f.points for f in self.families) - self.penalty)

    @property
    def max_points(self) -> float:
        return sum(f.max_points for f in self.families)

    @property
    def percent(self) -> float:
        return 100.0 * self.points / self.max_points if self.max_points else 100.0


def _family_score(
    family: str, tests: list[GradedTest], rubric: Rubric, partial: bool, told_apart: set[str]
) -> FamilyScore:
    """`told_apart`: the families in which a test that is not trivial passed."""
    entry = rubric.get(family)
    max_points = entry.points if entry else 0.0
    uncounted = frozenset(
        t.nodeid
        for t in tests
        if t.trivial and t.status == Status.PASSED and t.family not in told_apart
    )
    efficient = [t for t in tests if t.efficiency]
    others = [t for t in tests if not t.efficiency]
    # The efficiency points go to the efficiency tests: to the others where a run has none of
    # those (it selected some tests), and the whole family's to them where it has only those.
    if not efficient:
        efficiency = 0.0
    elif not others:
        efficiency = max_points
    else:
        efficiency = entry.efficiency if entry else 0.0

    def earned(group: list[GradedTest], points: float) -> float:
        counted = sum(t.status == Status.PASSED and t.nodeid not in uncounted for t in group)
        return points * counted / len(group) if group else 0.0

    if partial:
        points = earned(others, max_points - efficiency) + earned(efficient, efficiency)
    else:
        passed = all(t.status == Status.PASSED and t.nodeid not in uncounted for t in tests)
        points = max_points if passed else 0.0
    registered = BY_NAME[family].title if family in BY_NAME else family
    return FamilyScore(
        family=family,
        title=entry.title if entry else registered,
        tests=tuple(tests),
        points=points,
        max_points=max_points,
        status=family_status(t.status for t in tests),
        in_rubric=entry is not None,
        uncounted=uncounted,
        efficiency_points=efficiency,
    )


def score(submission: SubmissionResult, rubric: Rubric, partial: bool | None = None) -> Score:
    """Every family of the rubric that has contract tests, in rubric order, then the
    hardening tests of those families as one entry; the families the rubric lacks apart
    (`Score.beyond`), each with all its tests, but those the submission does not implement at
    all. `partial`: credit per case (None: as the rubric says)."""
    partial = rubric.partial if partial is None else partial
    groups: dict[str, list[GradedTest]] = {}
    for test in submission.tests:
        graded = rubric.get(test.family) is not None
        key = HARDENING if test.kind == HARDENING and graded else test.family
        groups.setdefault(key, []).append(test)
    told_apart = {t.family for t in submission.tests if t.status == Status.PASSED and not t.trivial}
    ordered = sorted(groups, key=rubric.order)
    scores = [_family_score(f, groups[f], rubric, partial, told_apart) for f in ordered]
    families = tuple(s for s in scores if s.in_rubric)
    beyond = tuple(s for s in scores if not s.in_rubric and s.status != Status.NOT_IMPLEMENTED)
    penalty = rubric.rules.penalty if submission.forbidden_count else 0.0
    return Score(submission, families, penalty, beyond)
