"""Real students' code keeps the points its correctness earns, graded beside the bundled
implementation as control (`correct_batch`, one grading run): a submission written against
upstream's calls alone, its package imported inside the adapters, the handout's
`tests.common` imported both ways (served by the harness, as it ships none), a module of its
own beside the package, an adapter that takes its weights dict apart, a module-level import
of packages the environment lacks, Python 3.12 syntax, and BPE pre-tokenised in a
`multiprocessing.Pool` sized by `os.cpu_count()` that writes caches beside its package and
into its working directory, scores 100 % of the default rubric, as the control does; the
same with upstream's adapters alone and a block missing a residual has its failing block and
LM located stage by stage; a submission graded on its own, deliberately wrong, package fails
exactly there; and what the sandbox or the environment does cost a submission is named in
its message. Families beyond
the rubric are reported apart, never as "not implemented" to a submission that has none of
them."""

from __future__ import annotations

import sys

import pytest

from cs336_harness.grading.results import HARDENING
from cs336_harness.grading.scoring import BEYOND, load_rubric
from tests.grading import synthetic
from tests.grading.conftest import GradingRun, family_statuses

DEFAULT_POINTS = sum(f.points for f in load_rubric().families)


def test_upstream_shaped_code_keeps_every_point_beside_the_control(correct_batch: GradingRun):
    assert correct_batch.returncode == 0, correct_batch.stderr
    if sys.version_info < (3, 12):  # the type statement is a SyntaxError, which says so
        silu = [t for t in correct_batch.results("upstream_shapes")["tests"]
                if t["extra_data"]["family"] == "silu"]  # fmt: skip
        assert silu and all("the grader runs Python 3.11" in t["output"] for t in silu)
        pytest.skip("upstream's handout asks for Python 3.12: grade on it (CI does)")
    for name in ("from_scratch", "upstream_shapes"):
        results = correct_batch.results(name)
        seed = correct_batch.summary()[name]["seed"]
        lost = [(t["name"], t["output"]) for t in _scored_failures(results["tests"])]
        assert results["score"] == results["max_score"] == DEFAULT_POINTS == 64, (name, seed, lost)
    tests = correct_batch.results("upstream_shapes")["tests"]
    failed = {t["extra_data"]["nodeid"].rpartition("::")[2] for t in tests
              if t["extra_data"]["status"] != "passed"}  # fmt: skip
    # Only the calls upstream never makes fail (each one a hardening test, worth nothing).
    assert failed and not _scored_failures(tests), failed
    assert "test_train_bpe_merges[no_special_tokens]" in failed  # the hardening ran


def _scored_failures(tests: list[dict]) -> list[dict]:
    """The tests not passed that count: neither hardening nor beyond the rubric."""
    return [
        t for t in tests
        if t["extra_data"]["status"] != "passed"
        and t["extra_data"]["kind"] != HARDENING
        and BEYOND not in t["name"]
    ]  # fmt: skip


def test_the_submissions_own_wrong_package_is_graded(correct_batch: GradingRun):
    results = correct_batch.results("wrong_package")
    assert family_statuses(results, "softmax") == {"failed"}
    assert family_statuses(results, "silu") == {"passed"}
    assert family_statuses(results, "linear") == {"not implemented"}
    # Nothing of what its handout lacks is shown to it, not even as "not implemented".
    assert not [t for t in results["tests"] if BEYOND in t["name"]]
    assert "layernorm" not in {t["extra_data"]["family"] for t in results["tests"]}


def test_an_upstream_shaped_block_is_located_by_its_stages(correct_batch: GradingRun):
    # Upstream's adapters alone: the judge calls its components in the sandbox, stage by
    # stage, and then its block with sublayers silenced, comparing with the stored traces.
    results = correct_batch.results("upstream_shapes_no_residual")
    components = {"rmsnorm", "multihead_self_attention_with_rope", "swiglu", "embedding"}
    assert {
        t["extra_data"]["status"]
        for t in results["tests"]
        if t["extra_data"]["family"] in components and t["extra_data"]["kind"] != HARDENING
    } == {"passed"}
    located = {
        "test_transformer_block.py::test_transformer_block[": (
            "first difference: inside run_transformer_block, though each of the block's "
            "sublayers matches the oracle alone"
        ),
        "test_transformer_lm.py::test_transformer_lm[": (
            "first difference: layers.0: run_transformer_block on the oracle's input of "
            "layers.0 departs from its output"
        ),
    }
    for test, words in located.items():
        outputs = [t["output"] for t in results["tests"] if test in t["extra_data"]["nodeid"]]
        assert len(outputs) >= 2, test
        for output in outputs:
            assert words in output and "a residual connection is missing" in output, output


def test_families_beyond_the_rubric_are_reported_apart_for_nothing(correct_batch: GradingRun):
    results = correct_batch.results("from_scratch")
    beyond = [t for t in results["tests"] if BEYOND in t["name"]]
    families = {t["extra_data"]["family"] for t in beyond}
    assert families == {
        "layernorm", "gelu", "positionwise_feedforward", "transformer_lm_from_config",
        "transformer_lm_module", "transformer_block_module", "decoding",
    }  # fmt: skip
    assert all(t["max_score"] == 0 and t["status"] == "passed" for t in beyond)
    assert "decoding" not in correct_batch.summary()["from_scratch"]


def test_each_absent_import_is_listed_and_fails_only_its_users(correct_batch: GradingRun):
    for name in ("upstream_shapes", "misfits"):
        output = correct_batch.results(name)["output"]
        assert (
            "imports modules the grading environment lacks: pynvml (cs336_basics/monitor.py:1), "
            "omegaconf (cs336_basics/monitor.py:2)" in output
        ), output
        assert "heapdict" not in output  # imported in a try that handles ImportError
    results = correct_batch.results("misfits")
    assert family_statuses(results, "softmax") == {"failed"}
    for test in results["tests"]:
        if test["extra_data"]["family"] == "softmax":
            assert (
                "the grading environment has no module 'pynvml' (imported at "
                "cs336_basics/monitor.py:1); it offers Python's standard library and einops"
            ) in test["output"]


def test_a_permission_error_from_the_sandbox_says_so(correct_batch: GradingRun):
    results = correct_batch.results("misfits")
    assert family_statuses(results, "silu") == {"failed"}
    for test in results["tests"]:
        if test["extra_data"]["family"] == "silu":
            assert "/usr/lib/cs336-cache.txt" in test["output"]
            assert (
                "only the working directory (a copy of the submission), /tmp and /dev/shm"
                in (test["output"])
            )
    others = {"softmax", "silu"}
    assert all(
        t["extra_data"]["status"] == "passed"
        for t in results["tests"]
        if t["extra_data"]["family"] not in others and t["extra_data"]["kind"] != HARDENING
    )


def test_a_module_beside_the_package_is_read_for_the_rules(correct_batch: GradingRun):
    rules = correct_batch.results("misfits")["extra_data"]["rules"]
    assert "helpers.py:5: torch.nn.functional.linear" in rules["forbidden"]
    assert any("helpers.py:5" in site for site in rules["called"]), rules["called"]


def _listed(page: str, section: str) -> str:
    """The class report's list of one kind of thing staff act on, as HTML."""
    start = page.index(f'<h3 id="act-{section}">')
    return page[start : page.index("<h3", start + 1)]


def test_the_class_report_lists_the_absent_modules_and_the_calls_seen(correct_batch: GradingRun):
    page = (correct_batch.out / "report.html").read_text()
    absent = _listed(page, "absent")
    for name in ("upstream_shapes", "misfits"):
        assert f">{name}</a>" in absent
    assert "pynvml (cs336_basics/monitor.py:1), omegaconf (cs336_basics/monitor.py:2)" in absent
    # Every copy of the bundled implementation is listed for its training command's imports
    # (synthetic.REFERENCE_ABSENT), and a control for nothing more.
    row = absent[absent.index(">from_scratch</a>") :]
    row = row[: row.index("</tr>")]
    assert synthetic.REFERENCE_ABSENT.split(": ", 1)[1] in row and "pynvml" not in row
    called = _listed(page, "called")
    assert ">hides</a>" in called and "scaled_dot_product_attention" in called
