"""Gradescope's autograder `results.json`, one per submission.

Gradescope reads `score`, and per test `name`, `score`, `max_score`, `output`,
`visibility` and `status`; its `status` takes only "passed" or "failed", so the grader's
own verdict ("timed out", "crashed", ...) goes in each test's `extra_data` and at the head
of its `output`. The top-level `output` opens with how the run was made (the sandbox, the
inputs) and what a reading of the source found against the assignment's rules (also in
`extra_data.rules`), then carries the judge's and the worker's output (head and tail) when a test
crashed, timed out or errored, where it is the best clue to what happened. Hardening tests
are named with their family: "Hardening (...): rope: test_x[...]".
"""

from __future__ import annotations

from typing import Any

from cs336_harness.grading.results import HARDENING, GradedTest, Status
from cs336_harness.grading.scoring import FamilyScore, Score


def _test_output(test: GradedTest, family: FamilyScore) -> str:
    if test.status == Status.PASSED:
        if family.points == 0 and family.max_points > 0:
            return "passed (the family earns its points only when all its tests pass)"
        return "passed"
    # "not implemented: run_rope" says its verdict already.
    said = test.message.startswith(str(test.status))
    text = test.message if said else f"{test.status}: {test.message}"
    return f"{text}\n\n{test.details}" if test.details else text


def _test_entry(test: GradedTest, family: FamilyScore, visibility: str) -> dict[str, Any]:
    earned, share = family.test_points(test)
    name = f"{test.family}: {test.name}" if family.family == HARDENING else test.name
    return {
        "name": f"{family.title}: {name}",
        "score": round(earned, 6),
        "max_score": round(share, 6),
        "status": "passed" if test.status == Status.PASSED else "failed",
        "output": _test_output(test, family),
        "visibility": visibility,
        "extra_data": {
            "status": str(test.status),
            "family": test.family,
            "kind": test.kind,
            "nodeid": test.nodeid,
        },
    }


DIAGNOSED_BY_OUTPUT = {Status.CRASHED, Status.TIMED_OUT, Status.ERROR}


def _rules(result: Score) -> tuple[list[str], dict[str, Any]]:
    """The assignment's rules, as the top-level output's closing lines and `extra_data`: a
    use changes no test's verdict (a penalty, if the rubric sets one, comes off the score)."""
    submission = result.submission
    lines = [f"forbidden: {f}" for f in submission.forbidden]
    lines += [f"not read: {u}" for u in submission.unread]
    if submission.forbidden_count > len(submission.forbidden):
        lines.append(f"... {submission.forbidden_count} forbidden uses in all")
    if result.penalty:
        lines.append(f"{result.penalty:g} points taken off the score (the rubric's [rules])")
    heading = "assignment rules (static reading of the source): " + (
        f"{submission.forbidden_count} forbidden use(s)"
        if submission.forbidden_count
        else "no forbidden use of torch.nn, torch.nn.functional or torch.optim found"
    )
    data = {
        "forbidden_uses": submission.forbidden_count,
        "forbidden": list(submission.forbidden),
        "unread": list(submission.unread),
        "penalty": result.penalty,
    }
    return [heading, *lines], data


def results_json(result: Score, visibility: str = "visible", run: list[str] = ()) -> dict[str, Any]:
    diagnose = any(t.status in DIAGNOSED_BY_OUTPUT for t in result.submission.tests)
    rules, rules_data = _rules(result)
    lines = [*run, *(f"note: {note}" for note in result.submission.notes), *rules]
    output = "\n".join([*lines, result.submission.output] if diagnose else lines)
    return {
        "score": round(result.points, 6),
        "max_score": round(result.max_points, 6),
        "execution_time": round(result.submission.wall_time, 1),
        "output": output,
        "visibility": visibility,
        "extra_data": {"rules": rules_data},
        "tests": [
            _test_entry(test, family, visibility)
            for family in result.families
            for test in family.tests
        ],
    }
