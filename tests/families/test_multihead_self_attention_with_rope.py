"""Causal multi-head self-attention with RoPE on every head's queries and keys."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.gradients import assert_input_gradients

FAMILY = family("multihead_self_attention_with_rope")

pytestmark = pytest.mark.family("multihead_self_attention_with_rope")


def test_multihead_self_attention_with_rope(case, adapters):
    out = adapters.run_multihead_self_attention_with_rope(
        d_model=case.params["d_model"],
        num_heads=case.params["num_heads"],
        max_seq_len=case.params["max_seq_len"],
        theta=case.params["theta"],
        q_proj_weight=case.weights["q_proj.weight"],
        k_proj_weight=case.weights["k_proj.weight"],
        v_proj_weight=case.weights["v_proj.weight"],
        o_proj_weight=case.weights["output_proj.weight"],
        in_features=case["in_features"],
        token_positions=case.tensors.get("token_positions"),
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("multihead_self_attention_with_rope", cases="backward")
def test_multihead_self_attention_with_rope_backward(case, adapters):
    kwargs = {
        "d_model": case.params["d_model"],
        "num_heads": case.params["num_heads"],
        "max_seq_len": case.params["max_seq_len"],
        "theta": case.params["theta"],
        "q_proj_weight": case.weights["q_proj.weight"],
        "k_proj_weight": case.weights["k_proj.weight"],
        "v_proj_weight": case.weights["v_proj.weight"],
        "o_proj_weight": case.weights["output_proj.weight"],
        "in_features": case["in_features"],
        "token_positions": case["token_positions"],
    }
    assert_input_gradients(
        adapters,
        case,
        "run_multihead_self_attention_with_rope",
        kwargs,
        FAMILY.backward,
    )
