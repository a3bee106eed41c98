"""Three correct implementations in different styles, graded in the sandbox on a fresh
draw (the default), each earn every core point (and the two with a training half, every
training point): from scratch (the bundled one), fused
PyTorch ops, and an upstream-style one (einops, a table-free RoPE, BPE's special tokens at
the top ids) that does not raise past the context and returns NaN for a fully masked
attention row, which only the hardening entry notices. Every report shows what the fused
one uses against the assignment's rules, read from its source and seen while it ran, and a
call hidden from the reading is seen. A correct one's output holds no warning of the harness."""

from __future__ import annotations

import pytest

from cs336_harness.grading.results import HARDENING
from cs336_harness.rules.called import CALLED_HEADING
from tests.grading.conftest import GradingRun
from tests.grading.test_scoring import CORE, TRAINING

BPE_CASES_WITH_SPECIALS = ("blank_lines_and_runs", "emoji", "exhausted", "overlapping_special",
                           "repeated_special", "shakespeare", "ties")  # fmt: skip
HARDENING_TITLE = "Hardening (behaviour this project chose where upstream is silent)"


@pytest.fixture(scope="module")
def graded(correct_batch: GradingRun) -> GradingRun:
    return correct_batch


def _core_points(run: GradingRun, name: str) -> float:
    return sum(float(run.summary()[name][family]) for family in CORE)


@pytest.mark.parametrize("name", ["from_scratch", "fused", "upstream_style"])
def test_a_correct_implementation_earns_every_core_point(graded: GradingRun, name: str):
    assert graded.returncode == 0, graded.stderr
    assert _core_points(graded, name) == 23, f"seed {graded.summary()[name]['seed']}"


def test_a_correct_implementations_output_holds_no_warning_of_the_harness(graded: GradingRun):
    """The judge imports its plugins before it forks each run, and pytest warns of a plugin
    imported before it could rewrite its asserts: a warnings summary in every student's
    output, unless the plugins say PYTEST_DONT_REWRITE."""
    output = graded.graded("from_scratch")["output"]
    assert "warnings summary" not in output, output[:3000]


@pytest.mark.parametrize("name", ["from_scratch", "fused"])
def test_the_training_half_is_graded_beside_the_code_through_probes(graded: GradingRun, name: str):
    # The optimizer, clipping, batch and checkpoint families drive the submission's objects
    # from probes that run in the sandboxed worker; only plain data comes back.
    points = sum(float(graded.summary()[name][family]) for family in TRAINING)
    assert points == sum(TRAINING.values()) == 9


def test_upstream_silence_costs_nothing_and_is_reported_apart(graded: GradingRun):
    tests = graded.results("upstream_style")["tests"]
    hardening = {t["extra_data"]["nodeid"].rpartition("::")[2]: t for t in tests
                 if t["extra_data"]["kind"] == HARDENING}  # fmt: skip
    failed = sorted(n for n, t in hardening.items() if t["extra_data"]["status"] == "failed")
    # Its BPE trainer gives the special tokens the top ids: only the fixed ids, and the
    # exhausted corpus that leaves a gap below them, are this project's choice.
    assert [n for n in failed if n.startswith("test_train_bpe")] == [
        "test_train_bpe_vocab[exhausted]",
        *(f"test_train_bpe_vocab_ids[{case}]" for case in BPE_CASES_WITH_SPECIALS),
    ]
    assert float(graded.summary()["upstream_style"]["train_bpe"]) == 15
    assert [n for n in failed if not n.startswith("test_train_bpe")] == [
        "test_scaled_dot_product_attention[4d_fully_masked_row]",
        "test_transformer_lm_rejects_sequences_past_the_context[one_layer_one_head]",
        "test_transformer_lm_rejects_sequences_past_the_context[reference]",
        "test_transformer_lm_rejects_sequences_past_the_context[twelve_layers_small_embeddings]",
        "test_transformer_lm_rejects_sequences_past_the_context[two_layers_vocab_257]",
    ]
    assert all(t["name"].startswith(HARDENING_TITLE) and t["max_score"] == 0
               for t in hardening.values())  # fmt: skip
    assert graded.summary()["upstream_style"][HARDENING] == "0"
    for name in ("from_scratch", "fused"):
        assert {t["status"] for t in graded.results(name)["tests"]} == {"passed"}


def test_the_rules_report_names_each_fused_op_and_nothing_from_scratch(graded: GradingRun):
    # Read from the source in the trusted process, in every report; it costs no point by
    # default (the rubric's [rules] penalty is 0).
    rules = {name: graded.results(name)["extra_data"]["rules"] for name in graded.summary()}
    assert rules["from_scratch"]["forbidden_uses"] == rules["upstream_style"]["forbidden_uses"] == 0
    fused = rules["fused"]["forbidden"]
    for op in ("torch.nn.functional.scaled_dot_product_attention", "torch.nn.Linear",
               "torch.optim.AdamW", "torch.nn.utils.clip_grad_norm_"):  # fmt: skip
        assert any(f.startswith("tests/adapters.py:") and f.endswith(f": {op}") for f in fused)
    assert rules["fused"]["penalty"] == 0
    summary = graded.summary()
    assert summary["fused"]["forbidden_uses"] == str(rules["fused"]["forbidden_uses"])
    assert summary["from_scratch"]["forbidden_uses"] == "0"
    suites = {s.get("name"): s for s in graded.junit()}
    properties = {p.get("name"): p.get("value") for p in suites["fused"].find("properties")}
    assert int(properties["forbidden_uses"]) == rules["fused"]["forbidden_uses"] > 0
    assert (
        "torch.nn.functional.scaled_dot_product_attention"
        in suites["fused"].find("system-out").text
    )
    assert (
        "assignment rules (static reading of the source): no forbidden use"
        in (graded.results("from_scratch")["output"])
    )


# What the fused adapters call, by the family of the tests that made them call it.
FUSED_CALLS = (
    ("scaled_dot_product_attention", "torch.nn.functional.scaled_dot_product_attention"),
    ("silu", "torch.nn.functional.silu"),
    ("rmsnorm", "torch.nn.functional.rms_norm"),
    ("cross_entropy", "torch.nn.functional.cross_entropy"),
    ("transformer_block_module", "torch.nn.Linear"),
    ("transformer_block_module", "torch.nn.RMSNorm"),
    ("transformer_lm_module", "torch.nn.Embedding"),
    ("adamw", "torch.optim.AdamW"),
    ("gradient_clipping", "torch.nn.utils.clip_grad_norm_"),
)


def test_the_calls_seen_while_it_ran_are_reported_beside_the_reading(graded: GradingRun):
    # Seen by the worker in the sandbox, as the submission's own process reported them: in
    # every report, costing nothing (only the reading's uses can cost a penalty).
    rules = {name: graded.results(name)["extra_data"]["rules"] for name in graded.summary()}
    assert rules["from_scratch"]["forbidden_call_sites"] == 0
    assert rules["upstream_style"]["forbidden_call_sites"] == 0
    fused = rules["fused"]["called"]
    for family, op in FUSED_CALLS:
        site = f"{family}: tests/adapters.py:"
        assert any(c.startswith(site) and f": {op} (" in c for c in fused), (family, op)
    summary = graded.summary()
    suites = {s.get("name"): s for s in graded.junit()}
    for name, found in rules.items():
        count = found["forbidden_call_sites"]
        assert summary[name]["forbidden_call_sites"] == str(count)
        properties = {p.get("name"): p.get("value") for p in suites[name].find("properties")}
        assert properties["forbidden_call_sites"] == str(count)
        heading = f"{CALLED_HEADING}: {count} forbidden call site" if count else CALLED_HEADING
        assert heading in graded.results(name)["output"]
        assert heading in suites[name].find("system-out").text
    assert f"called: {fused[0]}" in suites["fused"].find("system-out").text
    assert rules["fused"]["penalty"] == 0
    # The class table's `rules` and `calls` columns, side by side.
    row = next(line for line in graded.stdout.splitlines() if line.startswith("│ fused "))
    cells = [cell.strip() for cell in row.split("│")]
    uses, calls = str(rules["fused"]["forbidden_uses"]), str(rules["fused"]["forbidden_call_sites"])
    assert any(cells[i : i + 2] == [uses, calls] for i in range(len(cells) - 1)), row


def test_a_call_hidden_from_the_reading_is_seen_while_it_runs(graded: GradingRun):
    hides = graded.results("hides")["extra_data"]["rules"]
    assert hides["forbidden_uses"] == 0
    assert len(hides["called"]) == hides["forbidden_call_sites"] == 1
    [called] = hides["called"]
    assert called.startswith("scaled_dot_product_attention: tests/adapters.py:")
    assert ": torch.nn.functional.scaled_dot_product_attention (" in called
