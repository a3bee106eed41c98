"""The report writers check their own output: a report a strict reader could not read is
refused with a GraderError (exit 2) and not written."""

from __future__ import annotations

import csv
import html
import io
import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.reports.archive import read_archive, write_archive
from cs336_harness.grading.reports.checked import write_json
from cs336_harness.grading.reports.gradescope import render, results_json
from cs336_harness.grading.reports.junit import write_junit
from cs336_harness.grading.reports.summary import write_summary
from cs336_harness.grading.reports.table import (
    CALLED_TITLE,
    family_table,
    print_table,
    submissions_table,
)
from cs336_harness.grading.results import (
    CALLED_HEADING,
    Called,
    GradedTest,
    Status,
    SubmissionResult,
)
from cs336_harness.grading.scoring import Gradescope, Score, load_rubric, score


def _scored(name: str = "alice", message: str = "wrong") -> Score:
    tests = (GradedTest("t::test_rope[a]", "rope", Status.FAILED, message, message),)
    return score(SubmissionResult(name, Path("/s") / name, tests, "", 1.0, 1), load_rubric())


@pytest.mark.parametrize("uncleaned", ["\x1b[2J", "\x00", "\udcff", "\uffff"])
def test_junit_xml_that_would_not_parse_is_refused(tmp_path: Path, uncleaned: str):
    path = tmp_path / "junit.xml"
    with pytest.raises(GraderError, match="not well-formed XML"):
        write_junit([_scored(message=f"x{uncleaned}")], path, {})
    assert not path.exists()


def test_junit_xml_with_clean_text_is_written(tmp_path: Path):
    path = tmp_path / "junit.xml"
    write_junit([_scored("é\\x1b", "≤ 1e-6 \\udcff")], path, {"seed": None})
    assert 'name="é\\x1b"' in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("document", [{"name": "\udcff"}, {"score": float("nan")}])
def test_json_that_strict_readers_refuse_is_not_written(tmp_path: Path, document: dict):
    path = tmp_path / "results.json"
    with pytest.raises(GraderError, match="cannot write"):
        write_json(path, document)
    assert not path.exists()


def test_a_lone_surrogate_in_summary_csv_is_a_grader_error(tmp_path: Path):
    path = tmp_path / "summary.csv"
    with pytest.raises(GraderError, match="surrogates not allowed"):
        write_summary([_scored("bad\udcff")], path, "bubblewrap", None)
    assert not path.exists()


def test_grading_json_keeps_text_as_utf_8_for_merge(tmp_path: Path):
    path = tmp_path / "grading.json"
    write_archive([_scored("名前", "≤ \\x1b")], path, {"shard": "1/1"}, [0])
    assert "名前" in path.read_text(encoding="utf-8")
    _, [(_, result)] = read_archive(path)
    assert result.name == "名前" and result.tests[0].message == "≤ \\x1b"


def test_merge_cleans_a_grading_json_written_without_cleaning(tmp_path: Path):
    path = tmp_path / "grading.json"
    write_archive([_scored("ok", "ok")], path, {"shard": "1/1"}, [0])
    raw = json.loads(path.read_bytes())
    [submission] = raw["submissions"]
    submission |= {"name": "a\x1b]0;x\x07\udcff", "path": "/s/\x1b", "output": "\x1b[2J\n\x9b"}
    submission["tests"][0] |= {"message": "\u202e\n", "details": "\x00\n\udcff"}
    path.write_text(json.dumps(raw))  # ASCII, the surrogate as the escape \udcff
    _, [(_, result)] = read_archive(path)
    assert (result.name, str(result.path)) == ("a\\x1b]0;x\\x07\\udcff", "/s/\\x1b")
    assert result.output == "\\x1b[2J\n\\x9b"
    assert (result.tests[0].message, result.tests[0].details) == ("\\u202e\\n", "\\x00\n\\udcff")


def test_merge_keeps_what_the_rules_reading_found(tmp_path: Path):
    scored = _scored()
    found = ("cs336_basics/linear.py:3: torch.nn.Linear",)
    submission = replace(
        scored.submission, forbidden_count=4, forbidden=found, unread=("x.py (SyntaxError)",)
    )
    path = tmp_path / "grading.json"
    write_archive([score(submission, load_rubric())], path, {"shard": "1/1"}, [0])
    _, [(_, result)] = read_archive(path)
    assert (result.forbidden_count, result.forbidden, result.unread) == (
        4, found, ("x.py (SyntaxError)",)
    )  # fmt: skip


SITES = (
    Called("rope", "tests/adapters.py", 9, "torch.nn.functional.silu", 3),
    Called("softmax", "cs336_basics/x.py", 2, "torch.nn.Linear", 1),
)


def test_every_report_shows_the_calls_seen_at_run_time_and_apart(tmp_path: Path):
    submission = replace(_scored().submission, called_count=3, called=SITES)
    result = score(submission, load_rubric())
    lines = [
        "called: rope: tests/adapters.py:9: torch.nn.functional.silu (3 torch calls)",
        "called: softmax: cs336_basics/x.py:2: torch.nn.Linear (1 torch call)",
        "... 3 forbidden call sites in all",
    ]
    heading = f"{CALLED_HEADING}: 3 forbidden call sites"
    report = results_json(result, Gradescope())
    assert report["output"].endswith("\n".join([heading, *lines]))
    rules = report["extra_data"]["rules"]
    sites = [line.removeprefix("called: ") for line in lines[:2]]
    assert rules["forbidden_call_sites"] == 3 and rules["called"] == sites
    assert rules["penalty"] == 0  # the static reading alone decides a penalty
    write_junit([result], tmp_path / "junit.xml", {})
    [suite] = ET.parse(tmp_path / "junit.xml").getroot()
    assert {"name": "forbidden_call_sites", "value": "3"} in [
        p.attrib for p in suite.find("properties")
    ]
    assert suite.find("system-out").text.endswith("\n".join([heading, *lines]))
    write_summary([result], tmp_path / "summary.csv", "bubblewrap", None)
    [row] = csv.DictReader((tmp_path / "summary.csv").open())
    assert row["forbidden_call_sites"] == "3"
    console = Console(file=io.StringIO(), width=300)
    console.print(family_table(result))
    console.print(submissions_table([result]))
    shown = console.file.getvalue()
    assert f"{CALLED_TITLE} │" in shown and f"│ 3 forbidden call sites │ {sites[0]}" in shown
    assert "┃ calls ┃" in shown and "│     0 │     3 │" in shown  # rules, then calls
    write_archive([result], tmp_path / "grading.json", {"shard": "1/1"}, [0])
    _, [(_, merged)] = read_archive(tmp_path / "grading.json")
    assert (merged.called_count, merged.called) == (3, SITES)


def test_the_class_table_is_not_cut_at_80_columns_when_not_on_a_terminal():
    # A CI log or a pipe: rich would assume 80 columns and fold or cut the last ones.
    results = [_scored(f"submission_{i:02}_with_a_long_name") for i in range(3)]
    piped = Console(file=io.StringIO(), width=80, force_terminal=False)
    print_table(piped, submissions_table(results))
    lines = piped.file.getvalue().splitlines()
    assert any(len(line) > 80 for line in lines)
    header = next(line for line in lines if "submission" in line and "┃" in line)
    assert header.rstrip().endswith("seconds ┃")  # the last column, whole
    shown = [line for line in lines if "submission_" in line]
    assert [r.submission.name in line for r, line in zip(results, shown, strict=True)] == [True] * 3


def test_a_family_beyond_the_rubric_is_a_row_apart_worth_nothing():
    tests = (
        GradedTest("t::test_rope[a]", "rope", Status.PASSED),
        GradedTest("t::test_layernorm[a]", "layernorm", Status.FAILED, "off", "off"),
        GradedTest("t::test_gelu[a]", "gelu", Status.NOT_IMPLEMENTED, "not implemented: run_gelu"),
    )
    result = score(SubmissionResult("bob", Path("/s/bob"), tests, "", 1.0, 1), load_rubric())
    console = Console(file=io.StringIO(), width=200)
    console.print(family_table(result))
    console.print(submissions_table([result]))
    assert "GELU" not in console.file.getvalue()  # none of it written: not shown at all
    assert "not implemented" not in console.file.getvalue()
    row = next(line for line in console.file.getvalue().splitlines() if "LayerNorm" in line)
    assert "LayerNorm (beyond the rubric)" in row and "not scored" in row and "failed" in row
    [entry] = [t for t in results_json(result, Gradescope())["tests"] if "LayerNorm" in t["name"]]
    assert entry["name"].startswith("LayerNorm (beyond the rubric, not scored): ")
    assert (entry["score"], entry["max_score"]) == (0, 0)
    assert (result.points, result.max_points) == (2.0, 2.0)


MESSAGE = "expected <Tensor> but got `x`\n  ```` four ticks <script>alert(1)</script>"


@pytest.mark.parametrize(
    ("output_format", "shown"),
    [
        ("text", MESSAGE),
        ("ansi", MESSAGE),
        ("html", f"<pre>{html.escape(MESSAGE)}</pre>"),
        ("simple_format", html.escape(MESSAGE)),
        # A fence of five: the message's four backticks cannot close it.
        ("md", f"`````\n{MESSAGE}\n`````"),
    ],
)
def test_results_json_output_reads_as_written_in_every_format(output_format: str, shown: str):
    assert render(MESSAGE, output_format) == shown
