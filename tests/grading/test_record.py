"""Reading back the judge's verdict record, and excerpts of what the processes printed."""

import io
import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from cs336_harness.grading.grader import read_excerpt
from cs336_harness.grading.judge.record import MAX_LINE, MESSAGE_CHARS, Collected, read_record
from cs336_harness.grading.reports.table import family_table
from cs336_harness.grading.results import HARDENING, Status, SubmissionResult
from cs336_harness.grading.scoring import load_rubric, score
from cs336_harness.rules.called import CALLED_CHARS, CALLED_MAX, CALLED_SITES, read_called


def _event(**fields) -> str:
    return json.dumps(fields) + "\n"


def test_a_record_cut_short_keeps_what_finished(tmp_path: Path):
    log = tmp_path / "results.jsonl"
    log.write_text(
        _event(
            event="collected",
            tests=[
                {"nodeid": "a", "family": "f", "kind": "contract"},
                {
                    "nodeid": "b",
                    "family": "f",
                    "kind": HARDENING,
                    "trivial": "why",
                    "efficiency": True,
                },
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
    assert record.collected == [
        Collected("a", "f", "contract", ""),
        Collected("b", "f", HARDENING, "why", efficiency=True),
    ]
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


def test_the_reader_cleans_the_text_that_quotes_the_submission(tmp_path: Path):
    log = tmp_path / "results.jsonl"
    message = "ValueError: \x1b]0;pwned\x07 \x1b[2J \x9b \udcff \u202eevil"
    log.write_text(
        _event(event="collected", tests=[{"nodeid": "t::a", "family": "rope"}])
        + _event(
            event="finish",
            nodeid="t::a",
            status="failed",
            message=message + " " + "m" * 1_000,
            details=f"{message}\n\tline two\r\n",
        )
    )
    test = read_record(log).finished["t::a"]
    escaped = "ValueError: \\x1b]0;pwned\\x07 \\x1b[2J \\x9b \\udcff \\u202eevil"
    assert test.message.startswith(escaped + " mmm") and test.message.endswith("cut]")
    assert len(test.message) <= MESSAGE_CHARS
    assert test.details == f"{escaped}\n\tline two\\r\n"
    # And so the terminal table, which passes a Text's control characters through, gets none.
    result = SubmissionResult("s", Path("s"), (replace(test, family="rope"),), "", 1.0, 1)
    console = Console(file=io.StringIO(), width=300)
    console.print(family_table(score(result, load_rubric())))
    shown = console.file.getvalue()
    assert "\\x1b]0;pwned" in shown and "\x1b" not in shown and "\x9b" not in shown


def test_an_excerpt_is_cleaned_head_and_tail(tmp_path: Path):
    log = tmp_path / "output.log"
    hostile = "\x1b[2J\x9b\u202e".encode() + b"\xff\t\n"
    log.write_bytes(hostile + b"M" * 1_000_000 + hostile)
    excerpt = read_excerpt(log, head=100, tail=200)
    assert excerpt.startswith("\\x1b[2J\\x9b\\u202e\ufffd\t\n") and excerpt.endswith("\ufffd\t\n")
    assert excerpt.count("\\x1b[2J") == 2 and "\x1b" not in excerpt


def test_the_forbidden_calls_the_worker_reports_are_bounded_and_cleaned(tmp_path: Path):
    # What a submission that rewrote its worker could send; the first CALLED_SITES entries
    # are read, 7 of them malformed.
    forged = [
        ["torch.nn.\x1b[2JLinear", "tests/adapters.py\u202e", 3, 2],
        ["x" * 1000, "p", 1, 1],
        ["n", "p", True, 1],  # a bool is no line
        ["n", "p", -1, 1],
        ["n", "p", 1, 0],  # no call
        ["n", "p", 10**30, 10**30],
        "not a site",
        ["n", "p", 1],
        [1, "p", 1, 1],
        ["n", {"not": "text"}, 1, 1],
        *(["n", "p", i, 1] for i in range(100)),
    ]
    sites = read_called(forged)
    assert len(sites) == CALLED_SITES - 7
    assert sites[0] == ("torch.nn.\\x1b[2JLinear", "tests/adapters.py\\u202e", 3, 2)
    assert len(sites[1][0]) <= CALLED_CHARS and sites[1][0].endswith("cut]")
    assert sites[2] == ("n", "p", CALLED_MAX, CALLED_MAX)
    assert read_called("not a list") == read_called(None) == []
    # The record's reader reads what the judge wrote the same way.
    log = tmp_path / "results.jsonl"
    log.write_text(
        _event(event="collected", tests=[{"nodeid": "t::a", "family": "rope"}])
        + _event(event="finish", nodeid="t::a", status="passed", called=forged)
    )
    assert read_record(log).called == {"t::a": sites}


def test_the_diagnosis_is_kept_bounded_and_read_back_from_grading_json(tmp_path: Path):
    """The judge's diagnosis of a failure (the class report groups by it) crosses the record
    and grading.json; an older grading.json, without it, reads as undiagnosed."""
    from cs336_harness.grading.judge.record import ID_CHARS, MISTAKES
    from cs336_harness.grading.reports.archive import read_archive, write_archive

    log = tmp_path / "results.jsonl"
    log.write_text(
        _event(event="finish", nodeid="a", status="failed", diagnosis=["m1", "m2"])
        + _event(event="finish", nodeid="b", status="failed", error_shape="factor")
        + _event(event="finish", nodeid="c", status="failed", submission_raised=True)
        + _event(event="finish", nodeid="d", status="failed", diagnosis=["x" * 500] * 40)
    )
    found = read_record(log).finished
    assert found["a"].diagnosis == ("m1", "m2") and found["b"].error_shape == "factor"
    assert found["c"].submission_raised and not found["a"].submission_raised
    assert len(found["d"].diagnosis) == MISTAKES
    assert all(len(d) <= ID_CHARS for d in found["d"].diagnosis)

    tests = tuple(replace(t, family="f") for t in found.values())
    submission = SubmissionResult("s", Path("s"), tests, "", 1.0, 1)
    write_archive([score(submission, load_rubric())], tmp_path / "grading.json", {}, [0])
    [(_, back)] = read_archive(tmp_path / "grading.json")[1]
    assert back.tests == tests
    data = json.loads((tmp_path / "grading.json").read_text())
    for test in data["submissions"][0]["tests"]:
        for key in ("diagnosis", "error_shape", "submission_raised"):
            del test[key]
    (tmp_path / "grading.json").write_text(json.dumps(data))
    [(_, older)] = read_archive(tmp_path / "grading.json")[1]
    assert [(t.diagnosis, t.error_shape, t.submission_raised) for t in older.tests] == [
        ((), "", False)
    ] * 4
