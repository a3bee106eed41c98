"""Reading back the judge's verdict record, and excerpts of what the processes printed."""

import json
from pathlib import Path

import pytest

from cs336_harness.grading.grader import read_excerpt
from cs336_harness.grading.record import MAX_LINE, read_record
from cs336_harness.grading.results import HARDENING, Status

pytestmark = pytest.mark.grading


def _event(**fields) -> str:
    return json.dumps(fields) + "\n"


def test_a_record_cut_short_keeps_what_finished(tmp_path: Path):
    log = tmp_path / "results.jsonl"
    log.write_text(
        _event(
            event="collected",
            tests=[
                {"nodeid": "a", "family": "f", "kind": "contract"},
                {"nodeid": "b", "family": "f", "kind": HARDENING},
            ],
        )
        + _event(event="worker")
        + _event(event="start", nodeid="a")
        + _event(event="finish", nodeid="a", status="passed")
        + _event(event="worker")
        + _event(event="start", nodeid="b")
        + '{"event": "finish", "nodeid": "b", "sta'  # the judge died mid-line
    )
    record = read_record(log)
    assert record.collected == [("a", "f", "contract"), ("b", "f", HARDENING)]
    assert record.finished["a"].status == Status.PASSED
    assert "b" not in record.finished
    assert record.workers == 2


def test_overlong_and_malformed_lines_are_skipped(tmp_path: Path):
    log = tmp_path / "results.jsonl"
    log.write_text(
        "x" * (3 * MAX_LINE)
        + "\n"
        + "not json\n"
        + _event(event="finish", nodeid="a", family="f", status="no such status")
        + _event(event="finish", nodeid="b", family="f", status="failed", message="m")
    )
    record = read_record(log)
    assert list(record.finished) == ["b"]
    assert record.finished["b"].message == "m"


def test_an_excerpt_keeps_head_and_tail_only(tmp_path: Path):
    log = tmp_path / "output.log"
    log.write_bytes(b"H" * 5000 + b"M" * 1_000_000 + b"T" * 5000)
    excerpt = read_excerpt(log, head=100, tail=200)
    assert excerpt.startswith("H" * 100) and excerpt.endswith("T" * 200)
    assert "M" not in excerpt and len(excerpt) < 400
