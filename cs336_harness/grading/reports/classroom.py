"""GitHub Classroom's autograding: the result of each runner that its reporter
(classroom-resources/autograding-grading-reporter) reads, a runner per family of the rubric
or one for the whole assignment (the rubric's `[classroom] runners`), and one for the
hardening tests, apart (docs/grading.md, "On GitHub Classroom").

The reporter reads a runner's result as base64 JSON from the environment variable
`<RUNNER>_RESULTS`: `version`, `status` ("pass", "fail" or "error"), `max_score` and
`tests`, each with a `name`, `status`, `score`, `message`, `test_code` and `line_no`. The
points Classroom records are the sum of the tests' `score` over the runners with a
`max_score`; its table scores a runner as its share of tests with status "pass" times its
`max_score`. So a test is "pass" exactly when it earns its share, and per family the two
readings agree with cs336-grade's points."""

from __future__ import annotations

import base64
import json
from typing import Any

from cs336_harness.families import BY_NAME
from cs336_harness.grading.reports.verdicts import details, verdict
from cs336_harness.grading.results import HARDENING, GradedTest
from cs336_harness.grading.scoring import ASSIGNMENT, FamilyScore, Rubric, Score

# The result format's version, as the reporter's own command grader writes it.
VERSION = 1
# Scores are multiples of 2^-20 point: every partial sum of them is exact in a double, so
# the reporter's running sum (JavaScript's) is the sum of the families' points to the grid,
# and whole points print whole ("Points 64/64", never 63.99999999999999).
GRID = 2.0**-20
ASSIGNMENT_TITLE = "CS336 assignment 1"
# Each runner's result reaches the reporter as one environment variable: Linux takes at
# most 128 KiB in one, and about 2 MiB in all of them with the command line. Base64 makes
# 4 bytes of 3; the JSON is bounded to fit with room to spare, in all in proportion to
# the runners' tests.
RUNNER_BYTES = 96 << 10
ALL_BYTES = 768 << 10
# A failure's details shown under its message, at most (the grading step's log has them).
DETAILS_CHARS = 1000


def runner_names(rubric: Rubric) -> list[str]:
    """The runners the workflow lists, fixed by the rubric alone: its families that have
    tests (the registry's), or the assignment; then the hardening tests."""
    if rubric.classroom.runners == ASSIGNMENT:
        return [ASSIGNMENT, HARDENING]
    return [f.family for f in rubric.families if f.family in BY_NAME] + [HARDENING]


def _on_grid(points: float) -> float:
    return round(points / GRID) * GRID


def _earns(test: GradedTest, family: FamilyScore) -> bool:
    """Whether `test` earns its share ("pass" for the reporter); in a family worth nothing,
    whether it would."""
    return family.counts(test) and (family.points > 0 or family.max_points == 0)


def _scores(family: FamilyScore) -> list[float]:
    """Each test's score on the grid, the last earning test's taking up the difference so
    that the family's sum is its points on the grid."""
    shares = [family.test_points(test)[0] for test in family.tests]
    scores = [_on_grid(share) for share in shares]
    earning = [i for i, share in enumerate(shares) if share > 0]
    if earning:
        scores[earning[-1]] += _on_grid(family.points) - sum(scores)
    return scores


def inert(text: str) -> str:
    """`text` with nothing GitHub Actions would read as a workflow command when the
    reporter prints it: a line that opens with `::` (`::notice`, `::add-mask::`, the
    annotation Classroom reads its points from) or holds the older `##[`. The first
    character of each is written as a visible escape, as `untrusted.clean` writes others."""
    lines = []
    for line in text.replace("##[", "#\\x23[").split("\n"):
        start = len(line) - len(line.lstrip())
        if line[start:].startswith("::"):
            line = f"{line[:start]}\\x3a{line[start + 1 :]}"
        lines.append(line)
    return "\n".join(lines)


def _shown(test: GradedTest, family: FamilyScore, earns: bool, chars: int) -> str:
    """What the reporter prints under a test that does not earn: its verdict, the start of
    its details, and the command that runs it again (`test_code`, the one field it prints
    for a failed test)."""
    if earns:
        return ""
    more = details(test)[:chars] if chars > 0 else ""
    if more and len(details(test)) > chars:
        more += " [...]"
    rerun = f"uv run pytest '{test.nodeid}'"
    return inert("\n".join(part for part in (verdict(test, family), more, rerun) if part))


def _entry(test: GradedTest, family: FamilyScore, score: float, chars: int) -> dict[str, Any]:
    """A test as the reporter reads it, named as in Gradescope's results.json."""
    earns = _earns(test, family)
    name = f"{test.family}: {test.name}" if family.family == HARDENING else test.name
    return {
        "name": f"{family.title}: {name}",
        "status": "pass" if earns else "fail",
        "score": score,
        "message": inert(verdict(test, family)),
        "test_code": _shown(test, family, earns, chars),
        "filename": test.nodeid.partition("::")[0],
        "line_no": 0,  # the reporter prints "line <n>" unless it is 0
    }


def _runner(families: list[FamilyScore], limit: int) -> dict[str, Any]:
    """One runner's result, what it prints of each test cut until its JSON fits in `limit`
    bytes: the details, then the text under the message, then the message."""
    max_score = sum(f.max_points for f in families)
    lost = any(not _earns(t, f) for f in families for t in f.tests)
    for chars, message in ((DETAILS_CHARS, None), (200, None), (0, None), (-1, None), (-1, 80)):
        tests = []
        for family in families:
            for test, score in zip(family.tests, _scores(family), strict=True):
                entry = _entry(test, family, score, chars)
                if chars < 0:
                    entry["test_code"] = ""
                if message is not None and len(entry["message"]) > message:
                    entry["message"] = entry["message"][:message] + " [...]"
                tests.append(entry)
        result = {
            "version": VERSION,
            "status": "fail" if lost and max_score > 0 else "pass",
            "max_score": max_score,
            "tests": tests,
        }
        if len(json.dumps(result, ensure_ascii=False).encode()) <= limit:
            break
    return result


def _families(result: Score, runner: str) -> list[FamilyScore]:
    if runner == ASSIGNMENT:
        return [f for f in result.families if f.family != HARDENING]
    return [f for f in result.families if f.family == runner]


def runner_results(result: Score, rubric: Rubric) -> dict[str, dict[str, Any]]:
    """Runner → the result the reporter reads, for every runner of `runner_names`."""
    names = runner_names(rubric)
    counts = {name: sum(len(f.tests) for f in _families(result, name)) for name in names}
    total = sum(counts.values()) or 1
    results = {}
    for name in names:
        families = _families(result, name)
        if not families:  # no test of it was collected: nothing to grade, nothing lost
            results[name] = _not_graded(name, rubric, "no test of it was graded", "pass", 0.0)
            continue
        limit = min(RUNNER_BYTES, ALL_BYTES * counts[name] // total)
        results[name] = _runner(families, limit)
    return results


def _max_points(name: str, rubric: Rubric) -> float:
    if name == ASSIGNMENT:
        return sum(f.points for f in rubric.families if f.family in BY_NAME)
    entry = rubric.get(name)
    return entry.points if entry is not None else 0.0


def _not_graded(
    name: str, rubric: Rubric, message: str, status: str, max_score: float
) -> dict[str, Any]:
    entry = rubric.get(name)
    title = ASSIGNMENT_TITLE if entry is None else entry.title
    test = {"name": title, "status": status, "score": 0.0, "message": inert(message)}
    return {"version": VERSION, "status": status, "max_score": max_score,
            "tests": [test | {"test_code": "", "filename": "", "line_no": 0}]}  # fmt: skip


def not_graded(rubric: Rubric, message: str) -> dict[str, dict[str, Any]]:
    """Every runner an error that says why the submission was not graded (the reporter
    prints an error's message): 0 points of the rubric's, which Classroom records."""
    return {
        name: _not_graded(name, rubric, message, "error", _max_points(name, rubric))
        for name in runner_names(rubric)
    }


def step_outputs(results: dict[str, dict[str, Any]]) -> str:
    """The lines a GitHub Actions step appends to `$GITHUB_OUTPUT`: `<runner>=<base64>`,
    each runner's result as the reporter decodes it."""
    lines = []
    for name, result in results.items():
        data = json.dumps(result, ensure_ascii=False, allow_nan=False).encode()
        lines.append(f"{name}={base64.b64encode(data).decode()}")
    return "".join(f"{line}\n" for line in lines)
