"""The verdict record, `results.jsonl`: the judge's recorder (`recorder`) writes it, one JSON
event per line; the grader reads it back here, bounded and cleaned, where the submission's
words enter the grader (docs/architecture.md, "The verdict record")."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from cs336_harness.grading.results import CONTRACT, GradedTest, Status
from cs336_harness.rules.called import CallSite, read_called
from cs336_harness.untrusted import clean

# Caps on what one test puts in the record, and on what the grader keeps of it once cleaned:
# messages quote the submission's exceptions.
MESSAGE_CHARS = 300
DETAILS_CHARS = 4000
MAX_LINE = 64 * 1024
# The diagnosis's ids (a catalogued mistake's, an error shape's kind), and how many are kept.
ID_CHARS = 80
MISTAKES = 16
# What a failure follows from: a family's name, and a mistake's id after it.
FOLLOWS_CHARS = 2 * ID_CHARS


class Collected(NamedTuple):
    """A test the judge collected, as its `collected` event describes it."""

    nodeid: str
    family: str
    kind: str = CONTRACT
    trivial: str = ""
    efficiency: bool = False


@dataclass
class RunRecord:
    """The events of one judge run, as far as it got."""

    collected: list[Collected] | None = None
    # How many tests began: none, and no code of the submission has run yet.
    started: int = 0
    finished: dict[str, GradedTest] = field(default_factory=dict)
    workers: int = 0
    # The most memory one worker's cgroup held at once (0: no cgroup, or none reported).
    peak_memory: int = 0
    # node id → the forbidden calls the worker reported during that test.
    called: dict[str, list[CallSite]] = field(default_factory=dict)


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


def _reading(value: object) -> float | None:
    """An efficiency test's reading: a finite number ≥ 0, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def read_record(path: Path) -> RunRecord:
    record = RunRecord()
    for line in _lines(path):
        try:
            event = json.loads(line)
            kind = event.get("event")
            if kind == "collected":
                record.collected = [
                    Collected(
                        str(t["nodeid"]),
                        str(t["family"]),
                        str(t.get("kind", CONTRACT)),
                        str(t.get("trivial", "")),
                        t.get("efficiency") is True,
                    )
                    for t in event["tests"]
                ]
            elif kind == "worker":
                record.workers += 1
            elif kind == "start":
                record.started += 1
            elif kind == "worker_end":
                record.peak_memory = max(record.peak_memory, int(event["peak_memory"]))
            elif kind == "finish":
                test = GradedTest(
                    nodeid=str(event["nodeid"]),
                    family="",  # filled in from `collected` by the grader
                    status=Status(event["status"]),
                    message=clean(str(event.get("message", "")), MESSAGE_CHARS),
                    details=clean(str(event.get("details", "")), DETAILS_CHARS, multiline=True),
                    duration=float(event.get("duration", 0.0)),
                    load_sensitive=event.get("load_sensitive") is True,
                    host_failure=event.get("host_failure") is True,
                    diagnosis=tuple(
                        clean(str(d), ID_CHARS) for d in event.get("diagnosis", ())[:MISTAKES]
                    ),
                    error_shape=clean(str(event.get("error_shape", "")), ID_CHARS),
                    follows_from=clean(str(event.get("follows_from", "")), FOLLOWS_CHARS),
                    submission_raised=event.get("submission_raised") is True,
                    cost=_reading(event.get("cost")),
                    cost_cause=clean(str(event.get("cost_cause", "")), ID_CHARS),
                )
                record.finished[test.nodeid] = test
                record.called[test.nodeid] = read_called(event.get("called"))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line cut short by a judge that died mid-write
    return record
