"""What a graded class shows, as data for the page and the summary: the score distribution,
each family's pass rate and points, the mistakes the class made, and what else staff act
on. Every submission is referred to by its place in the class (`Ref`), which links to its
section; every failure by the line `failure_text` quotes, which never holds an expected
output."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import mean, median
from typing import Any

from cs336_harness.families import BY_NAME, FAMILIES
from cs336_harness.grading.reports.class_report.failure_text import (
    CatalogWords,
    comparison_line,
    quoted_line,
    unnamed_group,
)
from cs336_harness.grading.results import CONTRACT, HARDENING, GradedTest, Status
from cs336_harness.grading.scoring import FamilyScore, Score
from cs336_harness.judging.diagnosis import root_cause

# How the grader words a test stopped at the memory limit: a MemoryError in the worker
# ("... (memory limit: 4 GiB)", `remote._raised_message`) or a worker the kernel stopped
# ("... passed the memory limit (4 GiB) ...", `remote.RemoteAdapters._died`).
MEMORY_MARK = "memory limit"
# The note the grader adds for the modules a submission imports that the environment lacks
# (`grader._absent_notes`): the worker stood in for each.
ABSENT_NOTE = "imports modules the grading environment lacks: "
SLOWEST = 10
# Bins of the score histogram, over 0 … 100 % of the maximum.
BINS = 10


@dataclass(frozen=True)
class Ref:
    """A submission, by its place in the class (its section's anchor) and its name."""

    index: int
    name: str

    @property
    def anchor(self) -> str:
        return f"s{self.index}"


@dataclass(frozen=True)
class Example:
    ref: Ref
    test: str
    line: str
    # What was compared ("output ((4, 10), torch.float32) differs from the oracle."), cut.
    comparison: str = ""


@dataclass
class Group:
    """Submissions that failed alike: one named mistake (`words`), listed once, in the family
    it starts in, or a group of unnamed failures (`key`) of one family. `shows`: every family
    its failures show in, each with its submissions."""

    key: str
    family: str
    example: Example
    refs: list[Ref] = field(default_factory=list)
    tests: int = 0
    words: CatalogWords | None = None
    shows: dict[str, list[Ref]] = field(default_factory=dict)

    def add(self, ref: Ref, family: str) -> None:
        if ref not in self.refs:
            self.refs.append(ref)
        shown = self.shows.setdefault(family, [])
        if ref not in shown:
            shown.append(ref)
        self.tests += 1

    @property
    def breaks(self) -> list[tuple[str, str, int]]:
        """(family, title, submissions) of the other families its failures show in (those
        built on its own), in the registry's order."""
        others = sorted((f for f in self.shows if f != self.family), key=_family_order)
        return [(f, family_title(f), len(self.shows[f])) for f in others]


@dataclass
class FamilyMistakes:
    family: str
    title: str
    named: list[Group]
    unnamed: list[Group]

    @property
    def submissions(self) -> int:
        return len({r for g in (*self.named, *self.unnamed) for r in g.refs})


@dataclass(frozen=True)
class FamilyStats:
    """One family of the rubric across the class: how many submissions passed all its tests,
    some or none, and how many earned all its points, some or none (the same counts under
    the default credit per case; under credit per family a family earns all or nothing)."""

    family: str
    title: str
    max_points: float
    graded: int
    passed: int
    some: int
    none: int
    full_points: int
    some_points: int
    no_points: int
    mean_points: float

    @property
    def pass_rate(self) -> float:
        return self.passed / self.graded if self.graded else 0.0


@dataclass(frozen=True)
class Listed:
    """One submission in a list of what staff act on, with what to say about it."""

    ref: Ref
    what: str
    family: str = ""


@dataclass(frozen=True)
class FamilyRow:
    """A family of one submission that did not pass all its tests."""

    title: str
    passed: int
    tests: int
    points: str
    status: str
    # (how many tests, the line), each distinct line once, in test order.
    lines: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class SubmissionView:
    ref: Ref
    points: float
    max_points: float
    percent: float
    families_passed: int
    families: int
    rows: tuple[FamilyRow, ...]
    not_implemented: tuple[str, ...]
    notes: tuple[str, ...]
    rules: tuple[str, ...]
    wall_time: float
    peak_memory: int
    workers: int


@dataclass(frozen=True)
class Histogram:
    """Submissions per tenth of the maximum score: [0, 10) % … [90, 100] %."""

    edges: tuple[float, ...]
    members: tuple[tuple[Ref, ...], ...]

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(len(m) for m in self.members)

    def rows(self) -> list[tuple[str, tuple[Ref, ...]]]:
        last = len(self.members) - 1
        return [
            (f"{lo:g} – {hi:g} %" + (" (inclusive)" if i == last else ""), members)
            for i, (lo, hi, members) in enumerate(
                zip(self.edges[:-1], self.edges[1:], self.members, strict=True)
            )
        ]


@dataclass(frozen=True)
class Findings:
    run: dict[str, Any]
    submissions: tuple[SubmissionView, ...]
    histogram: Histogram
    score_summary: dict[str, str]
    families: tuple[FamilyStats, ...]
    # What the class got wrong, by the contract; and the hardening tests' failures, apart.
    mistakes: tuple[FamilyMistakes, ...]
    hardening_mistakes: tuple[FamilyMistakes, ...]
    absent: tuple[Listed, ...]
    forbidden: tuple[Listed, ...]
    called: tuple[Listed, ...]
    hardening: tuple[Listed, ...]
    timed_out: tuple[Listed, ...]
    crashed: tuple[Listed, ...]
    out_of_memory: tuple[Listed, ...]
    errors: tuple[Listed, ...]
    notes: tuple[Listed, ...]
    slowest: tuple[SubmissionView, ...]

    @property
    def named_mistakes(self) -> int:
        """How many distinct named mistakes the class made (each is listed once)."""
        return sum(len(f.named) for f in self.mistakes)


def _family_order(family: str) -> tuple[int, str]:
    names = [f.name for f in FAMILIES]
    return (names.index(family) if family in names else len(names), family)


def family_title(family: str) -> str:
    return BY_NAME[family].title if family in BY_NAME else family


def _failed(score: Score) -> Iterable[GradedTest]:
    """The tests the reports show that did not pass (a family beyond the rubric that the
    submission does not implement at all is not shown)."""
    for family in (*score.families, *score.beyond):
        yield from (t for t in family.tests if t.status != Status.PASSED)


@dataclass(frozen=True)
class _Place:
    """Where one failed test goes: a named mistake (`named`), or the unnamed group `key` of
    `family`; `origin`: the family it starts in."""

    origin: str
    named: str = ""
    key: str = ""


def _is_backward(test: GradedTest) -> bool:
    return "_backward[" in test.name


def _places(tests: list[GradedTest]) -> list[_Place]:
    """Where each of one submission's failed tests goes: a failure that follows from a wrong
    component (`follows_from`, the judge's reading) goes with that component's mistake; one
    named goes with its mistake; a gradient or an exception of a family whose other failures
    are named goes with that name, wherever it ran; the others by their own group."""
    named_in: dict[str, str] = {}
    first: dict[str, GradedTest] = {}
    for test in sorted(tests, key=lambda t: t.kind != CONTRACT):  # a contract test first
        first.setdefault(test.family, test)
        cause = root_cause.Cause.parse(test.follows_from)
        if test.diagnosis:
            named_in.setdefault(test.family, test.diagnosis[0])
        elif cause.family == test.family and cause.mistake:  # under its named forward output
            named_in.setdefault(test.family, cause.mistake)
    places = []
    for test in tests:
        cause = root_cause.Cause.parse(test.follows_from) if test.follows_from else None
        if cause is not None and (cause.mistake or cause.family in named_in):
            places.append(_Place(cause.family, cause.mistake or named_in[cause.family]))
        elif test.diagnosis:
            places.append(_Place(test.family, test.diagnosis[0]))
        elif cause is not None and cause.family in first:
            places.append(_Place(cause.family, key=unnamed_group(first[cause.family])))
        elif test.family in named_in and (test.submission_raised or _is_backward(test)):
            places.append(_Place(test.family, named_in[test.family]))
        else:
            places.append(_Place(test.family, key=unnamed_group(test)))
    return places


def _mistakes(scores: list[Score], kind: str = CONTRACT) -> tuple[FamilyMistakes, ...]:
    """The class's failures of tests of `kind` in groups: each named mistake once, in the
    family it starts in (of those where the class made it, the one the others are built
    from), with every submission that made it and the families it breaks; the unnamed
    failures by family and group. What the class's code costs is apart (`costs`)."""
    named: dict[str, Group] = {}
    origins: dict[str, set[str]] = defaultdict(set)
    # A named mistake's example, per family: the first failure its line opens.
    shown: dict[str, dict[str, Example]] = defaultdict(dict)
    unnamed: dict[tuple[str, str], Group] = {}
    for index, score in enumerate(scores):
        ref = Ref(index, score.submission.name)
        tests = list(_failed(score))
        for test, place in zip(tests, _places(tests), strict=True):
            # What the code costs is apart (`costs`): a slow verdict is no mistake of what
            # it computes.
            if test.kind != kind or (test.efficiency and test.status == Status.FAILED):
                continue
            line = quoted_line(test)
            example = Example(ref, test.name, line, comparison_line(test))
            if place.named:
                group = named.setdefault(place.named, Group(place.named, place.origin, example))
                origins[place.named].add(place.origin)
                # The catalog's words, from a failure that the mistake opens.
                if test.diagnosis and test.diagnosis[0] == place.named:
                    group.words = group.words or CatalogWords.from_line(line)
                    shown[place.named].setdefault(test.family, example)
            else:
                key = (place.origin, place.key)
                group = unnamed.setdefault(key, Group(place.key, place.origin, example))
            group.add(ref, test.family)
    for mistake, group in named.items():
        group.family = root_cause.home(origins[mistake]) or group.family
        examples = shown[mistake]
        group.example = examples.get(group.family) or next(iter(examples.values()), group.example)
    by_family: dict[str, tuple[list[Group], list[Group]]] = defaultdict(lambda: ([], []))
    for group in named.values():
        by_family[group.family][0].append(group)
    for group in unnamed.values():
        by_family[group.family][1].append(group)
    families = sorted(by_family, key=_family_order)
    return tuple(
        FamilyMistakes(f, family_title(f), _ranked(by_family[f][0]), _ranked(by_family[f][1]))
        for f in families
    )


def _ranked(groups: list[Group]) -> list[Group]:
    """Made by the most submissions first; ties by name, so one class reads the same."""
    return sorted(groups, key=lambda g: (-len(g.refs), g.key))


def _family_stats(scores: list[Score]) -> tuple[FamilyStats, ...]:
    by_family: dict[str, list[FamilyScore]] = defaultdict(list)
    for score in scores:
        for family in score.families:
            by_family[family.family].append(family)
    stats = []
    for name, entries in by_family.items():
        top = entries[0].max_points
        stats.append(
            FamilyStats(
                family=name,
                title=entries[0].title,
                max_points=top,
                graded=len(entries),
                passed=sum(e.passed == len(e.tests) for e in entries),
                some=sum(0 < e.passed < len(e.tests) for e in entries),
                none=sum(e.passed == 0 for e in entries),
                full_points=sum(top > 0 and e.points >= top for e in entries),
                some_points=sum(0 < e.points < top for e in entries),
                no_points=sum(top > 0 and e.points == 0 for e in entries),
                mean_points=mean(e.points for e in entries),
            )
        )
    return tuple(stats)


def _histogram(scores: list[Score]) -> Histogram:
    edges = tuple(100 * i / BINS for i in range(BINS + 1))
    members: list[list[Ref]] = [[] for _ in range(BINS)]
    for index, score in enumerate(scores):
        members[min(int(score.percent // (100 / BINS)), BINS - 1)].append(
            Ref(index, score.submission.name)
        )
    return Histogram(edges, tuple(tuple(m) for m in members))


def _score_summary(scores: list[Score]) -> dict[str, str]:
    if not scores:
        return {"submissions": "0"}
    points = [s.points for s in scores]
    top = scores[0].max_points
    return {
        "submissions": str(len(scores)),
        "maximum": f"{top:g} points",
        "mean": f"{mean(points):.4g}",
        "median": f"{median(points):.4g}",
        "lowest": f"{min(points):g}",
        "highest": f"{max(points):g}",
        "full marks": str(sum(s.points >= s.max_points for s in scores)),
    }


def _not_implemented(score: Score) -> tuple[str, ...]:
    """The titles of the families of which the submission implements nothing."""
    families = (*score.families, *score.beyond)
    return tuple(
        f.title for f in families if all(t.status == Status.NOT_IMPLEMENTED for t in f.tests)
    )


def _rows(score: Score) -> tuple[FamilyRow, ...]:
    """A row per family that did not pass, but those it does not implement at all (one line
    names them all, `_not_implemented`)."""
    rows = []
    for family in (*score.families, *score.beyond):
        if family.status == Status.PASSED or all(
            t.status == Status.NOT_IMPLEMENTED for t in family.tests
        ):
            continue
        lines: dict[str, int] = {}
        for test in family.tests:
            if test.status != Status.PASSED:
                # The hardening entry holds the tests of every family: each says its own.
                where = f"{test.family}: " if family.family == HARDENING else ""
                quoted = quoted_line(test)
                said = quoted.startswith(str(test.status))  # "not implemented: run_rope"
                line = f"{where}{quoted if said else f'{test.status}: {quoted}'}"
                lines[line] = lines.get(line, 0) + 1
        points = f"{family.points:g} / {family.max_points:g}" if family.in_rubric else "not scored"
        rows.append(
            FamilyRow(
                family.title,
                family.passed,
                len(family.tests),
                points,
                str(family.status),
                tuple((n, line) for line, n in lines.items()),
            )
        )
    return tuple(rows)


def _rules(score: Score) -> tuple[str, ...]:
    submission = score.submission
    lines = [f"forbidden use: {f}" for f in submission.forbidden]
    if submission.forbidden_count > len(submission.forbidden):
        lines.append(f"… {submission.forbidden_count} forbidden uses in all")
    lines += [f"not read: {u}" for u in submission.unread]
    lines += [f"called: {site}" for site in submission.called]
    if submission.called_count > len(submission.called):
        lines.append(f"… {submission.called_count} forbidden call sites in all")
    if score.penalty:
        lines.append(f"{score.penalty:g} points taken off (the rubric's [rules])")
    return tuple(lines)


def _view(index: int, score: Score) -> SubmissionView:
    submission = score.submission
    return SubmissionView(
        ref=Ref(index, submission.name),
        points=score.points,
        max_points=score.max_points,
        percent=score.percent,
        families_passed=sum(f.status == Status.PASSED for f in score.families),
        families=len(score.families),
        rows=_rows(score),
        not_implemented=_not_implemented(score),
        notes=submission.notes,
        rules=_rules(score),
        wall_time=submission.wall_time,
        peak_memory=submission.peak_memory,
        workers=submission.workers,
    )


def _by_status(scores: list[Score], wanted: Status) -> tuple[Listed, ...]:
    """One entry per submission with tests of the verdict `wanted`: how many, in which
    families, and the first one's line."""
    listed = []
    for index, score in enumerate(scores):
        tests = [t for t in _failed(score) if t.status == wanted]
        if tests:
            families = list(dict.fromkeys(t.family for t in tests))
            shown = ", ".join(families[:3]) + (
                f" and {len(families) - 3} more" if len(families) > 3 else ""
            )
            what = f"{len(tests)} test{'s' * (len(tests) > 1)}: {quoted_line(tests[0])}"
            listed.append(Listed(Ref(index, score.submission.name), what, shown))
    return tuple(listed)


def _out_of_memory(scores: list[Score]) -> tuple[Listed, ...]:
    return tuple(
        Listed(Ref(i, s.submission.name), f"{t.name}: {quoted_line(t)}", t.family)
        for i, s in enumerate(scores)
        for t in _failed(s)
        if t.status in (Status.FAILED, Status.CRASHED) and MEMORY_MARK in t.message
    )


def _hardening(scores: list[Score]) -> tuple[Listed, ...]:
    listed = []
    for index, score in enumerate(scores):
        failing: dict[str, int] = defaultdict(int)
        for family in (*score.families, *score.beyond):
            for test in family.tests:
                if test.kind == HARDENING and test.status != Status.PASSED:
                    failing[test.family] += 1
        for family, count in sorted(failing.items(), key=lambda kv: _family_order(kv[0])):
            what = f"{count} hardening test{'s' * (count > 1)} not passed"
            listed.append(Listed(Ref(index, score.submission.name), what, family))
    return tuple(listed)


def _rules_lists(scores: list[Score]) -> tuple[tuple[Listed, ...], tuple[Listed, ...]]:
    forbidden, called = [], []
    for index, score in enumerate(scores):
        s, ref = score.submission, Ref(index, score.submission.name)
        if s.forbidden_count:
            penalty = f"; {score.penalty:g} points off" if score.penalty else ""
            first = f": first {s.forbidden[0]}" if s.forbidden else ""
            forbidden.append(Listed(ref, f"{s.forbidden_count} use(s){first}{penalty}"))
        if s.called_count:
            first = f": first {s.called[0]}" if s.called else ""
            called.append(Listed(ref, f"{s.called_count} call site(s){first}"))
    return tuple(forbidden), tuple(called)


def find(scores: list[Score], run: dict[str, Any]) -> Findings:
    """Everything the report shows of `scores` (in class order) graded as `run` says."""
    views = tuple(_view(i, s) for i, s in enumerate(scores))
    forbidden, called = _rules_lists(scores)
    absent = tuple(
        Listed(v.ref, note.removeprefix(ABSENT_NOTE).partition("; ")[0])
        for v in views
        for note in v.notes
        if note.startswith(ABSENT_NOTE)
    )
    notes = tuple(
        Listed(v.ref, note) for v in views for note in v.notes if not note.startswith(ABSENT_NOTE)
    )
    return Findings(
        run=run,
        submissions=views,
        histogram=_histogram(scores),
        score_summary=_score_summary(scores),
        families=_family_stats(scores),
        mistakes=_mistakes(scores),
        hardening_mistakes=_mistakes(scores, HARDENING),
        absent=absent,
        forbidden=forbidden,
        called=called,
        hardening=_hardening(scores),
        timed_out=_by_status(scores, Status.TIMED_OUT),
        crashed=_by_status(scores, Status.CRASHED),
        out_of_memory=_out_of_memory(scores),
        errors=_by_status(scores, Status.ERROR),
        notes=notes,
        slowest=tuple(sorted(views, key=lambda v: -v.wall_time)[:SLOWEST]),
    )
