"""Real students' code keeps the points its correctness earns, graded beside the bundled
implementation as control (`correct_batch`, one grading run): a submission written against
upstream's calls alone, its package imported inside the adapters, the handout's
`tests.common` imported both ways (served by the harness, as it ships none), a module of its
own beside the package, an adapter that takes its weights dict apart, scores 100 % of the
default rubric, as the control does; and a submission graded on its own, deliberately wrong,
package fails exactly there. Families beyond the rubric are reported apart, never as "not
implemented" to a submission that has none of them."""

from __future__ import annotations

from cs336_harness.grading.results import HARDENING
from cs336_harness.grading.scoring import BEYOND, load_rubric
from tests.grading.conftest import GradingRun, family_statuses

DEFAULT_POINTS = sum(f.points for f in load_rubric().families)


def test_upstream_shaped_code_keeps_every_point_beside_the_control(correct_batch: GradingRun):
    assert correct_batch.returncode == 0, correct_batch.stderr
    for name in ("from_scratch", "upstream_shapes"):
        results = correct_batch.results(name)
        seed = correct_batch.summary()[name]["seed"]
        assert results["score"] == results["max_score"] == DEFAULT_POINTS == 64, (name, seed)
    tests = correct_batch.results("upstream_shapes")["tests"]
    failed = {t["extra_data"]["nodeid"].rpartition("::")[2] for t in tests
              if t["extra_data"]["status"] != "passed"}  # fmt: skip
    # Only the calls upstream never makes fail (each one a hardening test, worth nothing).
    assert failed and all(
        t["extra_data"]["kind"] == HARDENING or BEYOND in t["name"]
        for t in tests
        if t["extra_data"]["status"] != "passed"
    ), failed
    assert "test_train_bpe_merges[no_special_tokens]" in failed  # the hardening ran


def test_the_submissions_own_wrong_package_is_graded(correct_batch: GradingRun):
    results = correct_batch.results("wrong_package")
    assert family_statuses(results, "softmax") == {"failed"}
    assert family_statuses(results, "silu") == {"passed"}
    assert family_statuses(results, "linear") == {"not implemented"}
    # Nothing of what its handout lacks is shown to it, not even as "not implemented".
    assert not [t for t in results["tests"] if BEYOND in t["name"]]
    assert "layernorm" not in {t["extra_data"]["family"] for t in results["tests"]}


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
