"""The class report (`report.html`, `report.md`), as staff use it: a class built from the
evidence's wrong modules, each mistake made by a known number of submissions
(`evidence_class`), graded two at a time; its page opened in headless Chromium, its counts
read from the page, and checked to hold no expected output; rebuilt from the run's
grading.json by `cs336-grade report`. And the parts the page rests on: the line it quotes of
a failure, the catalog's words, the grader's wording it recognises, and its size for a class
of 600.

The class is graded on the stored fixtures: their expected outputs are at hand to look for
in the page, and their table of known mistakes is in the user's cache from the other
grading tests (a fresh draw's costs 9 to 15 s of CPU to write).
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from collections import defaultdict
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from cs336_harness.families import BY_NAME
from cs336_harness.grading import grader
from cs336_harness.grading.judge.remote import _raised_message
from cs336_harness.grading.reports.archive import read_archive
from cs336_harness.grading.reports.class_report import HTML, MARKDOWN, write_class_report
from cs336_harness.grading.reports.class_report.failure_text import (
    HARDENING_PREFIX,
    OTHER_OPENING_LINES,
    CatalogWords,
    quoted_line,
    unnamed_group,
)
from cs336_harness.grading.reports.class_report.findings import ABSENT_NOTE, MEMORY_MARK
from cs336_harness.grading.results import GradedTest, Status
from cs336_harness.grading.sandbox.interpreter import site_packages
from cs336_harness.grading.sandbox.limits import Limits
from cs336_harness.judging.diagnosis import root_cause
from cs336_harness.judging.diagnosis.diagnose import OR
from cs336_harness.judging.diagnosis.error_shape import _num
from cs336_harness.judging.diagnosis.numpy_cases import load
from cs336_harness.judging.pytest_plugin import HARDENING_LINE
from cs336_harness.paths import REPO_ROOT
from cs336_staff.catalog import MISTAKES
from tests.grading import evidence_class
from tests.grading.browser import chromium, console_errors
from tests.grading.conftest import GradingRun, grade
from tests.grading.large_class import RUN, large_class

FIXTURES = REPO_ROOT / "tests" / "fixtures"
# GitHub's step summary takes 1 MiB; the summary is to stay far below it.
SUMMARY_BYTES = 16 * 1024
PAGE_BYTES = 2 * 10**6


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[GradingRun, dict[str, str]]:
    root = tmp_path_factory.mktemp("evidence-class")
    made = evidence_class.write_class(root / "submissions")
    run = grade(root / "submissions", "-j2", "--stored-inputs", out=root / "out")
    assert run.returncode == 0, run.stderr
    return run, made


def _expected_groups() -> dict[tuple[str, str], set[str]]:
    """(family, group) → the submissions the class was built to put there: each declared
    mistake once, in the family it starts in (of those that catch its module, the one the
    others are built from), and each declared error shape in each family that catches its
    module."""
    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    for stem in evidence_class.COPIES:
        declared = evidence_class.declared(stem)
        names = set(evidence_class.submission_names(stem))
        for mistake in declared.mistakes:
            groups[root_cause.home(declared.caught_by), mistake] |= names
        for family in declared.caught_by:
            for shape in declared.error_shape:
                groups[family, f"error shape: {shape}"] |= names
    return groups


def test_a_class_run_writes_the_page_and_its_summary(graded):
    run, made = graded
    assert "report.html, report.md" in run.stdout
    summary = (run.out / MARKDOWN).read_text()
    assert len(summary.encode()) < SUMMARY_BYTES
    assert "| softmax\\_without\\_max\\_shift | softmax | 1 |" in summary
    # It names no submission, and quotes nothing a submission wrote.
    assert not [name for name in made if name in summary]
    assert "<" not in summary.replace("&lt;", "")


def _copied_page(run: GradingRun, out: Path) -> Path:
    """The class report of `evidence_class.COPIES`, from the run's own grading.json."""
    info, results = read_archive(run.out / "grading.json")
    scores = evidence_class.copied_class([result for _, result in sorted(results)])
    write_class_report(scores, out, info | {"class_size": len(scores)})
    return out / HTML


def test_the_page_counts_each_mistake_once_as_the_class_was_built(graded, tmp_path):
    """Each mistake is listed once, in its own family, with exactly its students: also those
    made in a component that others are built on, whose failures there (a named output, a
    gradient, a shape error) follow from it and are counted with it, not beside it."""
    run, _ = graded
    page = _copied_page(run, tmp_path)
    with chromium() as driver:
        driver.get(page.resolve().as_uri())
        errors = console_errors(driver)
        title = driver.title
        shown = driver.execute_script(
            """return [...document.querySelectorAll('div.mistake[data-kind=contract]')].map(d =>
                [d.dataset.family, d.dataset.key,
                 [...d.querySelectorAll('.refs a')].map(a => a.textContent)])"""
        )
        top = driver.execute_script(
            "return [...document.querySelectorAll('#top-mistakes tr')].slice(1)"
            ".map(tr => [...tr.querySelectorAll('td')].slice(0, 3).map(td => td.textContent))"
        )
        labels = driver.execute_script(
            "return [...document.querySelectorAll('#mistakes ~ .pair figure svg text')]"
            ".map(t => t.textContent).join(' ')"
        )
        scripts = driver.execute_script("return document.querySelectorAll('script').length")
        handlers = driver.execute_script(
            "return [...document.querySelectorAll('*')].filter(e => [...e.attributes]"
            ".some(a => a.name.startsWith('on'))).length"
        )
        text = driver.execute_script("return document.body.innerText")
        driver.save_screenshot(str(tmp_path / "report-top.png"))
        driver.execute_script("document.getElementById('mistakes').scrollIntoView()")
        driver.save_screenshot(str(tmp_path / "report-mistakes.png"))
    copies = sum(evidence_class.COPIES.values())
    assert errors == [], errors
    assert title == f"Class report: {copies + 2} submissions"
    # Each submission made by a wrong module stands in exactly the groups it was built for.
    expected = _expected_groups()
    on_page = [(family, key, sorted(names)) for family, key, names in shown]
    for stem in evidence_class.COPIES:
        names = set(evidence_class.submission_names(stem))
        found = sorted((f, k, n) for f, k, n in on_page if names & set(n))
        built = sorted((f, k, sorted(n)) for (f, k), n in expected.items() if n & names)
        assert found == built, (stem, found)
    # The mistakes made most: each once, with the family it starts in, which labels its bar.
    counts = {k: len(n) for (_, k), n in expected.items() if not k.startswith("error shape: ")}
    assert [row[0] for row in top] == sorted(counts, key=lambda m: (-counts[m], m))
    for key, family, count in top:
        assert (family, key) in expected and int(count) == counts[key]
        assert BY_NAME[family].title in labels, (family, labels)
    # The hostile submission's name and message are text on the page, and nothing of theirs
    # became an element: no script, no handler.
    assert scripts == 0 and handlers == 0
    assert evidence_class.HOSTILE_NAME in text
    assert evidence_class.HOSTILE_MESSAGE in text
    assert (tmp_path / "report-top.png").stat().st_size > 10_000


@cache
def _expected_values(family: str, case_id: str) -> np.ndarray:
    """The float values of a stored case's expected outputs (its tensors named expected*),
    sorted, once per case (an LM's are 640,000)."""
    case = load(FIXTURES, family, case_id)
    values = [
        np.ravel(tensor).astype(np.float64)
        for name, tensor in case.inputs.items()
        if "expected" in name and np.issubdtype(tensor.dtype, np.floating)
    ]
    return np.sort(np.concatenate(values)) if values else np.zeros(0)


# A number as text. The text's numbers are looked for among the expected values (a search
# per number of the page), not each expected value in the text.
WRITTEN_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")


def _written_expected(numbers: set[str], values: np.ndarray) -> set[str]:
    """Those of `numbers` (a text's) that write one of `values` in a form `_written_forms`
    gives (the four digits of a single value's too)."""
    if len(values) == 1:
        return numbers & _written_forms(float(values[0]), alone=True)
    found = set()
    for number in numbers:
        value = float(number)
        at = np.searchsorted(values, value)
        if at < len(values) and values[at] == value:
            found |= {number} & _written_forms(value, alone=False)
    return found


def _written_forms(value: float, alone: bool) -> set[str]:
    """How a failure's text writes `value`: torch.testing's repr, and error shape's four
    digits for a single value (`_num`; too short to look for among many values). Only forms
    of four significant digits or more: a round value (0.0, 19.5) is any number's too."""
    forms = {repr(value), _num(value)} if alone else {repr(value)}
    return {f for f in forms if _significant_digits(f) >= 4}


def _significant_digits(text: str) -> int:
    mantissa = text.partition("e")[0].lstrip("-+")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return len(mantissa.replace(".", "").lstrip("0"))


def test_the_page_holds_no_expected_output(graded):
    run, _ = graded
    record = (run.out / "grading.json").read_text()
    page = (run.out / HTML).read_text() + (run.out / MARKDOWN).read_text()
    on_page = set(WRITTEN_NUMBER.findall(page))
    leaked, quoted = [], 0
    for submission in json.loads(record)["submissions"]:
        for test in submission["tests"]:
            if test["status"] == "passed" or "[" not in test["nodeid"]:
                continue
            case_id = test["nodeid"].rpartition("[")[2].removesuffix("]")
            values = _expected_values(test["family"], case_id)
            text = set(WRITTEN_NUMBER.findall(test["message"] + test["details"]))
            quoted += len(_written_expected(text, values))
            leaked += [(test["nodeid"], f) for f in _written_expected(on_page, values)]
    # The failures' own text quotes expected values (the hostile submission's cross-entropy,
    # "the output is 6.444 where 5.944 is expected"; torch.testing's "Expected 5.94387..."):
    # the check can fail.
    assert quoted > 0
    assert leaked == []


def test_report_rebuilds_the_same_files_from_a_finished_run(graded, tmp_path):
    run, _ = graded
    again = grade("report", run.out, out=tmp_path)
    assert again.returncode == 0, again.stderr
    for name in (HTML, MARKDOWN):
        assert (tmp_path / name).read_bytes() == (run.out / name).read_bytes()
    # In place, as staff rerun it after changing nothing but this version.
    copy = tmp_path / "copy"
    shutil.copytree(run.out, copy)
    (copy / HTML).unlink()
    assert grade("report", copy, out=copy).returncode == 0
    assert (copy / HTML).read_bytes() == (run.out / HTML).read_bytes()


def test_report_on_a_folder_without_grading_json_fails_in_one_line(tmp_path):
    done = grade("report", tmp_path, out=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("cs336-grade: cannot write the class report: cannot")
    assert len(done.stderr.strip().splitlines()) == 1


def _failed(message: str, details: str = "", **kwargs) -> GradedTest:
    return GradedTest("t::test_x[a]", "x", Status.FAILED, message, details or message, **kwargs)


@pytest.mark.parametrize(
    ("test", "shown", "hidden"),
    [
        # An error shape of a single value quotes it: named by its kind instead.
        (
            _failed(
                "error shape: the output is 6.444 where 5.944 is expected (ratio 1.084)",
                error_shape="value",
            ),
            "error shape: a single value",
            "5.944",
        ),
        # torch.testing's scalar message, in the details only.
        (
            _failed(
                "the loss ((), torch.float32) differs from the oracle.Scalars are not close!",
                "the loss ((), torch.float32) differs from the oracle.Scalars are not close!"
                "\n\nExpected 5.943872451782227 but got 0.19",
            ),
            "differs from the oracle",
            "5.943872451782227",
        ),
        # The tokenizer's and BPE's own messages, cut before the oracle's side.
        (
            _failed("AssertionError: decode([104, 105]) gives 'hj', expected 'hi'"),
            "decode([104, 105]) gives 'hj'",
            "'hi'",
        ),
        (
            _failed(
                "merge 3 is (b'a', b'b'), the oracle's is (b' ', b't') (count ties go to "
                "the greater pair); merges before it agree: [(b'h', b'e')]"
            ),
            "merge 3 is (b'a', b'b')",
            "b' ', b't'",
        ),
        (
            _failed("AssertionError: sampled tokens [9] outside the nucleus [3, 7]"),
            "sampled tokens [9] outside",
            "[3, 7]",
        ),
        # A hardening test's line is the one after its preamble.
        (
            _failed(
                "hardening: stricter than the assignment",
                "hardening: stricter than the assignment\nid 5 is b'x', expected b'y'",
            ),
            "id 5 is b'x'",
            "b'y'",
        ),
        # The submission's own exception is its text, whole.
        (
            _failed(
                "RuntimeError: expected scalar type Float but found Double", submission_raised=True
            ),
            "RuntimeError: expected scalar type Float but found Double",
            "never hidden",
        ),
    ],
)
def test_the_quoted_line_never_quotes_the_oracles_side(test, shown, hidden):
    line = quoted_line(test)
    assert shown in line
    assert hidden not in line


def test_a_named_mistake_is_quoted_from_the_judges_line_not_the_cut_message():
    line = "likely cause: " + "x" * 320 + "; the fix"
    test = _failed(line[:300], f"{line}\noutput ((2,), torch.float32) differs from the oracle.",
                   diagnosis=("m",))  # fmt: skip
    assert quoted_line(test) == line
    assert CatalogWords.from_line(quoted_line(test)).fix == "the fix"


def test_unnamed_failures_group_by_shape_verdict_exception_or_masked_line():
    assert unnamed_group(_failed("error shape: x", error_shape="factor")) == "error shape: factor"
    raised = _failed("ValueError: bad (3, 4)", submission_raised=True)
    assert unnamed_group(raised) == "raised ValueError"
    timed_out = GradedTest("t::a", "x", Status.TIMED_OUT, "timed out: 30 s")
    assert unnamed_group(timed_out) == "timed out"
    a = _failed("output: shape (4, 12), expected (4, 13)")
    b = _failed("output: shape (2, 7), expected (2, 9)")
    assert unnamed_group(a) == unnamed_group(b) == "output: shape (#, #) …"
    assert unnamed_group(_failed("torch.float32 differs")) == "torch.float32 differs"


def test_each_catalog_message_is_its_cause_then_its_fix():
    """The page splits a named mistake's line at its `; ` into what the code does and the
    fix: each message has one, or none (the fix is the cause's opposite)."""
    assert {m.id for m in MISTAKES if m.message.count("; ") > 1} == set()
    split = [CatalogWords.from_line(m.line) for m in MISTAKES if "; " in m.message]
    assert split and all(w.cause and w.fix for w in split)


def test_the_wording_the_report_recognises_is_the_graders(tmp_path):
    assert HARDENING_LINE.startswith(HARDENING_PREFIX)
    cause = root_cause.Cause("rope", "rope_rotate_half")
    for line in (f"  {OR}x", root_cause.follows_line([cause]), root_cause.also_line([cause])):
        assert line.strip().startswith(OTHER_OPENING_LINES), line
    assert MEMORY_MARK in _raised_message("MemoryError", "", Limits(memory=1 << 30))
    (tmp_path / "train.py").write_text(textwrap.dedent("import pynvml\n"))
    assert grader._absent_notes(tmp_path, tuple(site_packages()))[0].startswith(ABSENT_NOTE)


def test_the_page_of_a_class_of_600_stays_under_2_MB(tmp_path):
    """(Its build time is `make bench`'s.)"""
    write_class_report(large_class(600), tmp_path, RUN | {"class_size": 600})
    size = (tmp_path / HTML).stat().st_size
    assert 100_000 < size < PAGE_BYTES
    assert (tmp_path / MARKDOWN).stat().st_size < SUMMARY_BYTES
