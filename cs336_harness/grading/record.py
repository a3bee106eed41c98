"""Read back what a test process left on disk: the results plugin's record and its output.

Both files were written by a process running untrusted code, so they are read defensively:
lines and excerpts are bounded, and lines that are not well-formed events are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cs336_harness.grading.results import GradedTest
from cs336_harness.grading.status import Status

# A record line is a few KB at most (the plugin caps messages); anything longer is forged.
MAX_LINE = 64 * 1024
OUTPUT_HEAD = 2000
OUTPUT_TAIL = 6000


@dataclass
class RunRecord:
    """The events of one test process, as far as it got."""

    collected: list[tuple[str, str]] | None = None
    finished: dict[str, GradedTest] = field(default_factory=dict)
    # The test that started and never finished: the one running when the process died.
    running: str | None = None


def _lines(path: Path) -> Iterator[bytes]:
    """Complete lines of at most MAX_LINE bytes; longer ones are skipped, not loaded."""
    if not path.is_file():
        return
    with path.open("rb") as f:
        while line := f.readline(MAX_LINE + 1):
            if not line.endswith(b"\n"):
                while (rest := f.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass  # the tail of an overlong line, or a truncated last line
                continue
            yield line


def _graded(event: dict) -> GradedTest:
    return GradedTest(
        nodeid=str(event["nodeid"]),
        family=str(event.get("family")),
        status=Status(event["status"]),
        message=str(event.get("message", "")),
        details=str(event.get("details", "")),
        duration=float(event.get("duration", 0.0)),
    )


def _apply(record: RunRecord, event: dict) -> None:
    kind = event.get("event")
    if kind == "collected":
        record.collected = [(str(t["nodeid"]), str(t["family"])) for t in event["tests"]]
    elif kind == "start":
        record.running = str(event["nodeid"])
    elif kind == "finish":
        test = _graded(event)
        record.finished[test.nodeid] = test
        if record.running == test.nodeid:
            record.running = None


def read_record(path: Path) -> RunRecord:
    record = RunRecord()
    for line in _lines(path):
        try:
            _apply(record, json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # not an event the plugin writes
    return record


def read_excerpt(path: Path, head: int = OUTPUT_HEAD, tail: int = OUTPUT_TAIL) -> str:
    """The first `head` and last `tail` bytes of a log, however large it grew."""
    if not path.is_file():
        return ""
    size = path.stat().st_size
    with path.open("rb") as f:
        if size <= head + tail:
            return f.read().decode(errors="replace")
        start = f.read(head)
        f.seek(size - tail)
        end = f.read(tail)
    skipped = size - head - tail
    return (
        start.decode(errors="replace")
        + f"\n[... {skipped} bytes of output left out ...]\n"
        + end.decode(errors="replace")
    )
