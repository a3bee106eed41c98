"""Gradescope's autograder `results.json`, one per submission: the score, each test with the
grader's own verdict in `extra_data`, an output that opens with how the run was made and
what the rules found, and the rubric's `[gradescope]` visibility (docs/architecture.md,
"Reports")."""

from __future__ import annotations

import html
import re
from typing import Any

from cs336_harness.grading.reports.verdicts import described, rules_lines, same_failure
from cs336_harness.grading.results import HARDENING, GradedTest, Status
from cs336_harness.grading.scoring import BEYOND, FamilyScore, Gradescope, Score


def render(text: str, output_format: str) -> str:
    """`text` as Gradescope shows it, character for character, in `output_format`.

    The grader's text holds what a submission controls (its exception messages), so where
    Gradescope reads markup it is escaped, never interpreted. As text or ANSI it goes as it
    is: a submission's control characters were made visible escapes where they entered."""
    if output_format == "html":
        return f"<pre>{html.escape(text)}</pre>"
    if output_format == "simple_format":  # HTML whose line breaks Gradescope keeps
        return html.escape(text)
    if output_format == "md":
        # A code block: its fence is longer than any run of backticks inside, so none ends it.
        longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{fence}\n{text}\n{fence}"
    return text


def _test_entry(
    test: GradedTest, family: FamilyScore, number: str, settings: Gradescope
) -> dict[str, Any]:
    earned, share = family.test_points(test)
    name = f"{test.family}: {test.name}" if family.family == HARDENING else test.name
    title = family.title if family.in_rubric else f"{family.title} ({BEYOND}, not scored)"
    # A hardening test is shown as the rubric's hardening entry says, also where it is listed
    # under a family beyond the rubric.
    shown_as = HARDENING if test.kind == HARDENING else family.family
    return {
        "name": f"{title}: {name}",
        # Family and test, in report order: Gradescope numbers the tests by it.
        "number": number,
        "score": round(earned, 6),
        "max_score": round(share, 6),
        "status": "passed" if test.status == Status.PASSED else "failed",
        "output": render(described(test, family), settings.output_format),
        "visibility": settings.test_visibility(shown_as),
        "extra_data": {
            "status": str(test.status),
            "family": test.family,
            "kind": test.kind,
            "nodeid": test.nodeid,
            **({"trivial": test.trivial} if test.trivial else {}),
        },
    }


DIAGNOSED_BY_OUTPUT = {Status.CRASHED, Status.TIMED_OUT, Status.ERROR}


def _rules(result: Score) -> tuple[list[str], dict[str, Any]]:
    """The assignment's rules, as the top-level output's closing lines (`rules_lines`) and
    `extra_data`."""
    submission = result.submission
    data = {
        "forbidden_uses": submission.forbidden_count,
        "forbidden": list(submission.forbidden),
        "unread": list(submission.unread),
        "penalty": result.penalty,
        "forbidden_call_sites": submission.called_count,
        "called": [str(site) for site in submission.called],
    }
    return rules_lines(result), data


def document(score: float, output: str, settings: Gradescope, **details: Any) -> dict[str, Any]:
    """The top level of a results.json: the score (then `details`), the output, and how
    Gradescope shows them."""
    report = {
        "score": round(score, 6),
        **details,
        "output": render(output, settings.output_format),
        "output_format": settings.output_format,
        "test_output_format": settings.output_format,
        # Test names are the trusted tests' own, plain text whatever the output format.
        "test_name_format": "text",
        "visibility": settings.visibility,
        "stdout_visibility": settings.stdout_visibility,
    }
    if settings.leaderboard:
        report["leaderboard"] = [{"name": "Score", "value": report["score"], "order": "desc"}]
    return report


def results_json(
    result: Score, settings: Gradescope, run: list[str] = (), for_students: bool = False
) -> dict[str, Any]:
    """`for_students`: the output holds what a student can act on; how the run was made
    (`run`) goes to `extra_data` and the judge's and the worker's logs nowhere (the
    grader's terminal has them, for staff)."""
    diagnose = any(t.status in DIAGNOSED_BY_OUTPUT for t in result.submission.tests)
    rules, rules_data = _rules(result)
    same = same_failure(result) if for_students else ""
    shown_run = [] if for_students else list(run)
    notes = [f"note: {note}" for note in result.submission.notes]
    lines = [*([same] if same else []), *shown_run, *notes, *rules]
    logs = diagnose and not for_students
    output = "\n".join([*lines, result.submission.output] if logs else lines)
    report = document(
        result.points,
        output,
        settings,
        # Not one of Gradescope's documented fields: the total, for scripts reading the file.
        max_score=round(result.max_points, 6),
        execution_time=round(result.submission.wall_time, 1),
    )
    run_data = {"run": list(run)} if for_students else {}
    return report | {
        "extra_data": {"rules": rules_data, **run_data},
        "tests": [
            _test_entry(test, family, f"{i}.{j}", settings)
            for i, family in enumerate((*result.families, *result.beyond), 1)
            for j, test in enumerate(family.tests, 1)
        ],
    }
