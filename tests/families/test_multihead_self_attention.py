"""Causal multi-head self-attention without position information."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families import costs
from tests.families.gradients import assert_input_gradients

FAMILY = family("multihead_self_attention")

pytestmark = pytest.mark.family("multihead_self_attention")


def test_multihead_self_attention(case, adapters):
    out = adapters.run_multihead_self_attention(
        d_model=case.params["d_model"],
        num_heads=case.params["num_heads"],
        q_proj_weight=case.weights["q_proj.weight"],
        k_proj_weight=case.weights["k_proj.weight"],
        v_proj_weight=case.weights["v_proj.weight"],
        o_proj_weight=case.weights["output_proj.weight"],
        in_features=case["in_features"],
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("multihead_self_attention", cases="backward")
def test_multihead_self_attention_backward(case, adapters):
    kwargs = {
        "d_model": case.params["d_model"],
        "num_heads": case.params["num_heads"],
        "q_proj_weight": case.weights["q_proj.weight"],
        "k_proj_weight": case.weights["k_proj.weight"],
        "v_proj_weight": case.weights["v_proj.weight"],
        "o_proj_weight": case.weights["output_proj.weight"],
        "in_features": case["in_features"],
    }
    assert_input_gradients(adapters, case, "run_multihead_self_attention", kwargs, FAMILY.backward)


@pytest.mark.efficiency
@pytest.mark.hardening(costs.HARDENING)
@pytest.mark.trivial(costs.TRIVIAL)
def test_multihead_self_attention_cost(adapters, request):
    costs.check_cost("multihead_self_attention", adapters, request)
