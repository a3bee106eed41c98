"""Submissions whose text is hostile, graded in one run beside a correct control: exception
messages full of control characters, escape sequences, lone surrogates and bidi overrides,
a megabyte-long message; and output, a directory name and a file name of the same kind.
Every report must still parse, and none of it may reach the terminal raw."""

from __future__ import annotations

import csv
import json
import os
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from tests.grading import synthetic
from tests.grading.conftest import TEST_TIMEOUT, GradingRun, grade, statuses

# The Python source of each message, evaluated in the worker (no raw control characters or
# surrogates in the adapters file itself).
RAISES = synthetic.Synthetic(
    adapters_tail="""
    def run_softmax(*args, **kwargs):
        raise ValueError("controls " + "".join(map(chr, range(32))) + " end")

    def run_silu(*args, **kwargs):
        raise ValueError("lone \\udcff and \\ud800 surrogates")

    def run_linear(*args, **kwargs):
        raise ValueError("clear \\x1b[2J title \\x1b]0;pwned\\x07 done")

    def run_embedding(*args, **kwargs):
        raise ValueError("c1 \\x9b31m bidi \\u202eevil\\u202c \\u2066x\\u2069")

    def run_rmsnorm(*args, **kwargs):
        raise ValueError("\\x1b" * 1_000_000)
    """,
    # A source line that Python warns about when the grader parses it: a backslash before a
    # raw escape character is an invalid escape, and the warning quotes it.
    files={"cs336_basics/notes.py": 'NOTE = "\\\x1b]0;pwned\x07 \\\x1b[2J"\n'},
)
HOSTILE_OUTPUT = "out \\x1b]0;pwned\\x07 \\x1b[2J c1 \\x9b bidi \\u202e end"
# Prints at import and before crashing once (on one SiLU case), so that its output is in
# the reports, whose output section shows it when a test crashed; invalid UTF-8 too. Its
# directory's name and one of its files' are as hostile (the names of files left out of
# the copy are in the reports).
PRINTS = synthetic.Synthetic(
    adapters_tail=f"""
    import os
    import sys

    print("{HOSTILE_OUTPUT}", flush=True)
    sys.stderr.buffer.write(b"bytes \\xff\\xfe \\xc2\\x9b\\n")
    sys.stderr.flush()
    _bundled_run_silu = run_silu

    def run_silu(*args, **kwargs):
        features = args[0] if args else kwargs["in_features"]  # upstream passes it positionally
        if features.abs().max() > 50:
            print("{HOSTILE_OUTPUT}", file=sys.stderr, flush=True)
            os._exit(3)
        return _bundled_run_silu(*args, **kwargs)
    """
)
# Rich markup and emoji codes too, which the terminal must show as they are.
NAME = os.fsdecode(b"name \x1b]0;pwned\x07 \x1b[31mred\nline \xff [b]:smile:")
CLEAN_NAME = "name \\x1b]0;pwned\\x07 \\x1b[31mred\\nline \\udcff [b]:smile:"
FIFO = b"pipe \x1b[2J\n\xff"
CLEAN_FIFO = "cs336_basics/pipe \\x1b[2J\\n\\xff (FIFO, not a regular file)"
# What no terminal output and no report may hold: ESC, the C1 controls, surrogates.
RAW = re.compile("[\x1b\x80-\x9f\ud800-\udfff]")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> GradingRun:
    root = tmp_path_factory.mktemp("untrusted")
    submissions = root / "submissions"
    synthetic.write_submission(submissions / "correct", synthetic.CORRECT)
    synthetic.write_submission(submissions / "raises", RAISES)
    prints = synthetic.write_submission(submissions / NAME, PRINTS)
    os.mkfifo(os.fsencode(prints / "cs336_basics") + b"/" + FIFO)
    # Rich's own styles would put ESC on stdout too, were it told that a pipe is a terminal.
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    return grade(
        submissions,
        "-j2",
        "--stored-inputs",
        f"--test-timeout={TEST_TIMEOUT}",
        "--fail-under=100",
        out=root / "out",
        env=env,
    )


def _strings(value: Any) -> list[str]:
    """Every string in a JSON document, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _outputs(run: GradingRun, name: str, nodeid_part: str) -> list[str]:
    tests = run.results(name)["tests"]
    return [t["output"] for t in tests if nodeid_part in t["extra_data"]["nodeid"]]


def test_the_run_completes_and_the_control_keeps_full_marks(run: GradingRun):
    # --fail-under=100: every other submission; exit 1, said so, and no traceback.
    assert run.returncode == 1 and "below --fail-under 100%" in run.stderr, run.stderr
    results = run.results("correct")
    assert results["score"] == results["max_score"] >= 23
    assert set(statuses(results).values()) == {"passed"}


def test_no_terminal_output_holds_raw_control_characters(run: GradingRun):
    assert not RAW.search(run.stdout) and not RAW.search(run.stderr)
    assert "\\x1b[31mred" in run.stdout  # the table of submissions
    assert CLEAN_NAME in run.stderr  # below --fail-under


def test_every_report_parses_with_strict_readers(run: GradingRun):
    suites = ET.parse(run.out / "junit.xml").getroot().findall("testsuite")
    assert sorted(s.get("name") for s in suites) == sorted(["correct", "raises", CLEAN_NAME])
    for path in [run.out / "grading.json", *run.out.glob("*/results.json")]:
        document = json.loads(path.read_bytes().decode())  # strict UTF-8
        assert not any(RAW.search(s) for s in _strings(document)), path
    with (run.out / "summary.csv").open(encoding="utf-8", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    assert set(rows) == {"correct", "raises", CLEAN_NAME}
    assert rows[CLEAN_NAME]["path"].endswith(CLEAN_NAME)


def test_messages_show_their_escapes(run: GradingRun):
    softmax = "".join(_outputs(run, "raises", "test_softmax"))
    controls = [f"\\x{i:02x}" for i in range(32) if chr(i) not in "\t\n\r"]
    assert all(escape in softmax for escape in [*controls, "\\r"])
    assert all("lone \\udcff and \\ud800" in o for o in _outputs(run, "raises", "test_silu"))
    linear = _outputs(run, "raises", "test_linear")
    assert all("clear \\x1b[2J title \\x1b]0;pwned\\x07 done" in o for o in linear)
    embedding = _outputs(run, "raises", "test_embedding")
    assert all("c1 \\x9b31m bidi \\u202eevil\\u202c \\u2066x\\u2069" in o for o in embedding)
    rmsnorm = _outputs(run, "raises", "test_rmsnorm")
    assert rmsnorm and all(len(o) < 6000 and "characters cut]" in o for o in rmsnorm)
    failures = ET.parse(run.out / "junit.xml").getroot().iter("failure")
    assert any("\\x1b]0;pwned\\x07" in f.get("message", "") for f in failures)


def test_output_and_file_names_show_their_escapes(run: GradingRun):
    output = run.results(CLEAN_NAME)["output"]  # a test crashed: the output is in the report
    assert HOSTILE_OUTPUT in output
    assert "bytes \ufffd\ufffd \\x9b" in output
    assert f"left out of the copy graded: {CLEAN_FIFO}" in output
