"""PrairieLearn's external-grading `results.json` (its docs' "Grading results"): `gradable`,
`score` from 0 to 1, a `message`, an `output`, and `tests`, one per family, with `points`
and `max_points` (the hardening entry and the families beyond the rubric worth 0, which
PrairieLearn shows neutrally), a `message` and an `output` that holds each test's verdict
(docs/grading.md, "On PrairieLearn").

PrairieLearn puts `message` and `output` into its page through ansi2html, which escapes
them, and the test names through Mustache: the text goes as it is, a submission's
control characters already visible escapes. It reads no file over 1 MB: the details are
cut until the file fits."""

from __future__ import annotations

import json
from typing import Any

from cs336_harness.families import BY_NAME
from cs336_harness.grading.reports.gradescope import DIAGNOSED_BY_OUTPUT
from cs336_harness.grading.reports.verdicts import details, rules_lines, same_failure, verdict
from cs336_harness.grading.results import Status
from cs336_harness.grading.scoring import BEYOND, FamilyScore, Score

# PrairieLearn refuses results over 1 MB; the grader keeps well under it.
MAX_BYTES = 900_000
RULES_TITLE = "Assignment rules"


def _family_message(family: FamilyScore) -> str:
    """The family's line: how many of its tests passed, and the first problem's verdict."""
    passed = f"{family.passed} of {len(family.tests)} tests passed"
    first = family.first_problem
    return passed if first is None else f"{passed}; {first.name}: {verdict(first, family)}"


def _family_output(family: FamilyScore, chars: int) -> str:
    """Each test's verdict, on a line of its own, and under a failure the start of its
    details (`chars` of them; none below 0)."""
    lines = []
    for test in family.tests:
        lines.append(f"{test.name}: {verdict(test, family)}")
        more = details(test) if test.status != Status.PASSED and chars > 0 else ""
        if more:
            cut = more[:chars] + (" [...]" if len(more) > chars else "")
            lines += [f"    {line}" for line in cut.splitlines()]
    return "\n".join(lines)


def _test(family: FamilyScore, chars: int) -> dict[str, Any]:
    registered = BY_NAME.get(family.family)
    name = family.title if family.in_rubric else f"{family.title} ({BEYOND}, not scored)"
    return {
        "name": name,
        **({"description": f"Its cases catch: {registered.catches}"} if registered else {}),
        "points": family.points,
        "max_points": family.max_points,
        "message": _family_message(family),
        "output": _family_output(family, chars),
    }


def results(
    result: Score, run: list[str] | None = None, for_students: bool = False
) -> dict[str, Any]:
    """`for_students`: the message and output hold what a student can act on; how the run
    was made (`run`) goes to the `cs336` field, which PrairieLearn keeps and does not show,
    and the judge's and the worker's logs nowhere (the entry point prints them for staff)."""
    run = list(run or [])
    same = same_failure(result)
    points = f"{result.points:g} of {result.max_points:g} points"
    notes = [f"note: {note}" for note in result.submission.notes]
    message = "\n".join([points, *([same] if same else []), *notes, *rules_lines(result)])
    logs = not for_students and any(
        t.status in DIAGNOSED_BY_OUTPUT for t in result.submission.tests
    )
    shown = [] if for_students else run
    families = (*result.families, *result.beyond)
    # A penalty as a test of its own, so that the tests' points add up to the score's.
    penalty = [] if not result.penalty else [{
        "name": RULES_TITLE, "points": -result.penalty, "max_points": 0.0,
        "message": f"{result.penalty:g} points taken off the score (the rubric's [rules])",
        "output": "",
    }]  # fmt: skip
    score = result.percent / 100
    for chars in (4000, 1000, 200, 0):
        document = {
            "gradable": True,
            "score": min(1.0, max(0.0, score)),
            "message": message,
            # The logs go last, when nothing else can be cut.
            "output": "\n".join([*shown, *([result.submission.output] if logs and chars else [])]),
            "tests": [*(_test(family, chars) for family in families), *penalty],
            "cs336": {"points": result.points, "max_points": result.max_points, "run": run},
        }
        if len(json.dumps(document, ensure_ascii=False).encode()) <= MAX_BYTES:
            break
    return document


def not_gradable(message: str) -> dict[str, Any]:
    """A submission that could not be graded: PrairieLearn marks it "invalid, not gradable",
    awards and takes no points and counts no attempt, and shows `format_errors`."""
    return {"gradable": False, "message": message, "format_errors": [message]}
