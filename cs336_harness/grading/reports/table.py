"""Terminal tables (rich): per family for one submission, per submission for many.

Names and messages go in as `Text`, never as markup: `test_rope[reference]` would lose its
brackets, and a submission's name or error message is not ours to interpret.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cs336_harness.grading.results import Status, SubmissionResult
from cs336_harness.grading.scoring import BEYOND, FamilyScore, Score

STYLES = {
    Status.PASSED: "green",
    Status.FAILED: "red",
    Status.NOT_IMPLEMENTED: "yellow",
    Status.TIMED_OUT: "magenta",
    Status.CRASHED: "bold red",
    Status.ERROR: "bold red",
}
MESSAGE_WIDTH = 80
# Wider than any table here needs, to measure one's own width without a terminal's limit.
NATURAL_WIDTH = 10_000


def _status(status: Status) -> Text:
    return Text(str(status), style=STYLES[status])


def _points(earned: float, available: float) -> str:
    return f"{earned:g} / {available:g}"


def _first_failure(family: FamilyScore) -> Text:
    """The first line of the first failure (the test itself is named in the reports)."""
    test = family.first_problem
    if test is None:
        return Text()
    text = test.message or test.name
    return Text(text if len(text) <= MESSAGE_WIDTH else text[: MESSAGE_WIDTH - 1] + "…")


def family_table(result: Score) -> Table:
    title = f"{result.submission.name}: {_points(result.points, result.max_points)} points"
    table = Table(title=Text(title), title_justify="left")
    table.add_column("family")
    table.add_column("tests passed", justify="right")
    table.add_column("points", justify="right")
    table.add_column("status")
    table.add_column("first failure", overflow="fold")
    for family in result.families:
        table.add_row(
            Text(family.title),
            f"{family.passed} / {len(family.tests)}",
            _points(family.points, family.max_points),
            _status(family.status),
            _first_failure(family),
        )
    if result.beyond:
        table.add_section()
    for family in result.beyond:  # implemented, at least in part, though the rubric lacks it
        table.add_row(
            Text(f"{family.title} ({BEYOND})"),
            f"{family.passed} / {len(family.tests)}",
            "not scored",
            _status(family.status),
            _first_failure(family),
        )
    table.add_section()
    penalty = f"−{result.penalty:g}" if result.penalty else "0"
    table.add_row(Text(RULES_TITLE), "", penalty, *_rules(result.submission))
    table.add_row(Text(CALLED_TITLE), "", "", *_called(result.submission))
    return table


RULES_TITLE = "Assignment rules (static reading)"
# The worker's report comes from the submission's own process, and decides no points.
CALLED_TITLE = "Assignment rules (calls seen at run time: evidence, not proof)"


def _rules(submission: SubmissionResult) -> tuple[Text, Text]:
    """(status, first finding) of the rules' row: what a reading of the source found."""
    if submission.forbidden_count:
        count = submission.forbidden_count
        status = Text(f"{count} forbidden use{'s' * (count > 1)}", style="yellow")
        return status, Text(submission.forbidden[0])
    if submission.unread:
        return Text("not all read", style="yellow"), Text(f"not read: {submission.unread[0]}")
    return Text("none found", style="green"), Text()


def _called(submission: SubmissionResult) -> tuple[Text, Text]:
    """(status, first site) of the row of what the worker saw the submission call."""
    if submission.called_count:
        count = submission.called_count
        status = Text(f"{count} forbidden call site{'s' * (count > 1)}", style="yellow")
        return status, Text(str(submission.called[0]))
    return Text("none seen", style="green"), Text()


def submissions_table(results: list[Score]) -> Table:
    table = Table(title=f"{len(results)} submissions", title_justify="left")
    table.add_column("submission", min_width=16)  # names stay findable in a narrow terminal
    table.add_column("points", justify="right")
    table.add_column("families passed", justify="right")
    table.add_column("tests not passed")
    table.add_column("rules", justify="right")  # forbidden uses, from the source
    table.add_column("calls", justify="right")  # forbidden call sites the worker saw
    table.add_column("seconds", justify="right")
    for result in results:
        passed = sum(f.status == Status.PASSED for f in result.families)
        counts: dict[Status, int] = {}
        # The tests the reports show: not those of a family beyond the rubric it lacks.
        for test in (t for f in (*result.families, *result.beyond) for t in f.tests):
            if test.status != Status.PASSED:
                counts[test.status] = counts.get(test.status, 0) + 1
        problems = Text(", ").join(
            Text(f"{n} {status}", style=STYLES[status]) for status, n in counts.items()
        )
        table.add_row(
            Text(result.submission.name),
            _points(result.points, result.max_points),
            f"{passed} / {len(result.families)}",
            problems,
            str(result.submission.forbidden_count),
            str(result.submission.called_count),
            f"{result.submission.wall_time:.1f}",
        )
    return table


def print_table(console: Console, table: Table) -> None:
    """Print `table` whole: on a terminal at its width, elsewhere (a pipe, a CI log, a file)
    as wide as the table needs, where rich would otherwise assume 80 columns and fold or
    cut the columns that do not fit."""
    if console.is_terminal:
        console.print(table)
        return
    natural = console.measure(table, options=console.options.update_width(NATURAL_WIDTH))
    # `print(width=...)` takes the console's width as a ceiling: the console is widened.
    saved = console.width
    console.width = max(natural.maximum, saved)
    try:
        console.print(table)
    finally:
        console.width = saved
