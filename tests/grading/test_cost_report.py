"""The class report's cost section, from results made up without grading: each known cause
of a cost listed once per family with exactly its submissions, ranked by how many; each
efficiency test's readings, costliest first; a slow verdict kept out of what the class got
wrong; the page and the summary saying it."""

from __future__ import annotations

from pathlib import Path

from cs336_harness.grading.reports.class_report import HTML, MARKDOWN, costs, write_class_report
from cs336_harness.grading.reports.class_report.findings import find
from cs336_harness.grading.results import HARDENING, GradedTest, Status, SubmissionResult
from cs336_harness.grading.scoring import load_rubric, score
from tests.grading.large_class import RUN

SPEED = "tests/families/test_train_bpe.py::test_train_bpe_speed[cost]"
STREAM = "tests/families/test_tokenizer.py::test_encode_iterable_streams[cost]"
ATTENTION = "tests/families/test_scaled_dot_product_attention.py::test_sdpa_cost"


def _efficiency(nodeid: str, family: str, reading: float, cause: str = "", kind: str = "contract"):
    status = Status.FAILED if cause else Status.PASSED
    message = f"too costly; likely {cause}" if cause else ""
    return GradedTest(
        nodeid, family, status, message, efficiency=True, cost=reading, cost_cause=cause, kind=kind
    )


def _class():
    """Five submissions: two trainers that recount (readings 2.6 and 1.8), one stream read
    whole, one attention looped over positions (hardening), one fine."""
    rows = {
        "fine": (0.2, 0.1, 0.5, "", "", ""),
        "recounts-a": (2.6, 0.1, 0.5, "bpe_recounts_pairs", "", ""),
        "recounts-b": (1.8, 0.2, 0.5, "bpe_recounts_pairs", "", ""),
        "reads-whole": (0.3, 1000.0, 0.5, "", "stream_read_whole", ""),
        "loops": (0.2, 0.1, 1.6, "", "", "model_loops_over_positions"),
    }
    results = []
    for name, (speed, stream, attention, *causes) in rows.items():
        tests = (
            GradedTest("t::bpe", "train_bpe", Status.PASSED),
            _efficiency(SPEED, "train_bpe", speed, causes[0]),
            GradedTest("t::tok", "tokenizer", Status.PASSED),
            _efficiency(STREAM, "tokenizer", stream, causes[1]),
            GradedTest("t::sdpa", "scaled_dot_product_attention", Status.PASSED),
            _efficiency(ATTENTION, "scaled_dot_product_attention", attention, causes[2], HARDENING),
        )
        results.append(score(SubmissionResult(name, Path(name), tests, "", 1.0, 1), load_rubric()))
    return results


def test_each_cause_is_listed_once_per_family_with_exactly_its_submissions():
    found = costs.find(_class())
    listed = [(g.cause.id, g.family, sorted(r.name for r in g.refs)) for g in found.causes]
    assert listed == [
        ("bpe_recounts_pairs", "train_bpe", ["recounts-a", "recounts-b"]),
        ("model_loops_over_positions", "scaled_dot_product_attention", ["loops"]),
        ("stream_read_whole", "tokenizer", ["reads-whole"]),
    ]
    speed = next(t for t in found.tests if t.family == "train_bpe")
    assert [r.ref.name for r in speed.readings[:2]] == ["recounts-a", "recounts-b"]
    assert speed.over == 2 and found.submissions == 4


def test_a_slow_verdict_is_not_among_what_the_class_got_wrong():
    assert find(_class(), RUN).mistakes == ()


def test_the_page_and_the_summary_say_the_costs(tmp_path):
    write_class_report(_class(), tmp_path, RUN)
    page = (tmp_path / HTML).read_text()
    assert 'id="cost"' in page and 'id="c-train_bpe-bpe_recounts_pairs"' in page
    assert page.count("<svg") == 3  # scores, families, the costs' readings; no mistakes
    summary = (tmp_path / MARKDOWN).read_text()
    assert "bpe\\_recounts\\_pairs | train\\_bpe | 2 |" in summary
