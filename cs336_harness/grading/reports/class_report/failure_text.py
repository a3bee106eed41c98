"""What the class report quotes of one failed test: one line that never holds an expected
output, the known mistake it names (its cause and fix, in the catalog's words), and the group
it falls in where none is named (docs/grading.md, "No expected output on the page")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cs336_harness.grading.results import GradedTest, Status
from cs336_harness.judging.diagnosis.error_shape import GENERIC, PREFIX
from cs336_harness.judging.diagnosis.root_cause import FOLLOWS

LIKELY_CAUSE = "likely cause: "
# How a hardening test's failure opens (`pytest_plugin.HARDENING_LINE`), before its own line.
HARDENING_PREFIX = "hardening: "
# The error shapes whose line quotes the expected's values: the single value it should
# have been, the expected's RMS.
QUOTING_SHAPES = {
    "value": "a single value, off (the value is in the submission's results.json)",
    GENERIC: "no simple pattern (the sizes are in the submission's results.json)",
}
# Where a test's own message starts to quote the oracle's side: its values, or the tokens
# its probabilities allow (decoding's "outside the nucleus [...]").
ORACLE_SIDE = re.compile(r"\b(?:expected|the oracle's|the nucleus)\b", re.IGNORECASE)
CUT = "…"
# The diagnosis's other lines (`diagnose.opening_lines`, `root_cause`): the same output's
# other names, the wrong component a failure follows from, one that is wrong beside it.
OTHER_OPENING_LINES = ("or, the same output here: ", FOLLOWS, "your ")
# How pytest marks the exception's lines in a traceback.
TRACEBACK_MARGIN = re.compile(r"^E\s+")
# A number, not a part of a word ("float32"): masked to group messages that differ only
# in their numbers.
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]?\d+)?(?!\w|\.\d)")


def _lines(test: GradedTest) -> list[str]:
    """The failure's lines: its details (which open with the whole message when the test
    failed with a message alone; the recorded message is its first line, cut at 300
    characters), without pytest's `E` margin, else the message."""
    details = [TRACEBACK_MARGIN.sub("", line.strip()) for line in test.details.splitlines()]
    return [line for line in details if line] or [test.message]


def _own_line(test: GradedTest) -> str:
    """The failure's first line, after a hardening test's preamble and the line that says
    which wrong component it follows from (the report says that apart)."""
    if HARDENING_PREFIX not in test.message and FOLLOWS not in test.message:
        return test.message
    lines = _lines(test)
    # The preamble's lines may carry a prefix (pytest's "Failed: ", an exception's type).
    said = [i for i, line in enumerate(lines) if HARDENING_PREFIX in line or FOLLOWS in line]
    after = said[0] + 1 if said else len(lines)
    while after < len(lines) and (HARDENING_PREFIX in lines[after] or FOLLOWS in lines[after]):
        after += 1
    return lines[after] if after < len(lines) else test.message


def _diagnosis_line(test: GradedTest, prefix: str) -> str | None:
    """The diagnosis's line (`likely cause: ...`, `error shape: ...`): the judge wrote it
    before any of the failure's own text, so the first such line is the judge's."""
    return next((line for line in _lines(test) if line.startswith(prefix)), None)


def cut_at_oracle_side(text: str) -> str:
    match = ORACLE_SIDE.search(text)
    return text if match is None else text[: match.start()].rstrip(" ,;:(") + f" {CUT}"


def quoted_line(test: GradedTest) -> str:
    """The one line the report shows for a failed test (see the module's docstring)."""
    if test.diagnosis:
        line = _diagnosis_line(test, LIKELY_CAUSE)
        if line is not None:
            return line
    if test.error_shape:
        if test.error_shape in QUOTING_SHAPES:
            return f"{PREFIX}{QUOTING_SHAPES[test.error_shape]}"
        line = _diagnosis_line(test, PREFIX)
        if line is not None:
            return line
    if test.status != Status.FAILED:
        return test.message
    if test.submission_raised:  # its own text, whole
        return _own_line(test)
    return cut_at_oracle_side(_own_line(test))


def comparison_line(test: GradedTest) -> str:
    """The line after a diagnosis (what was compared: "output ((4, 10), torch.float32)
    differs from the oracle."), cut before the oracle's side; "" when there is none."""
    lines = [
        line
        for line in _lines(test)
        if not line.startswith((LIKELY_CAUSE, PREFIX, HARDENING_PREFIX, *OTHER_OPENING_LINES))
    ]
    return cut_at_oracle_side(lines[0].removeprefix("no known mistake matches; ")) if lines else ""


@dataclass(frozen=True)
class CatalogWords:
    """A catalogued mistake's message, split where the catalog writes its two halves: what
    the code does, then `; ` and the fix (169 of the 189 messages; the others state the
    cause alone, and the fix is its opposite)."""

    cause: str
    fix: str

    @classmethod
    def from_line(cls, line: str) -> CatalogWords:
        message = line.removeprefix(LIKELY_CAUSE)
        cause, _, fix = message.partition("; ")
        return cls(cause, fix)


def unnamed_group(test: GradedTest) -> str:
    """The group of a failure that names no known mistake: its error's shape, its verdict
    where it did not fail a comparison, the type of the exception the submission raised,
    or else its line with the numbers masked (#), so that one check failing alike on
    several inputs is one group."""
    if test.error_shape:
        return f"error shape: {test.error_shape}"
    if test.status != Status.FAILED:
        return str(test.status)
    if test.submission_raised:
        kind = _own_line(test).partition(":")[0]
        return f"raised {kind}"
    return NUMBER.sub("#", quoted_line(test))
