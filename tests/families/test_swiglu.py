"""SwiGLU feed-forward: W2 (silu(W1 x) ⊙ W3 x)."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.gradients import assert_input_gradients

FAMILY = family("swiglu")

pytestmark = pytest.mark.family("swiglu")


def test_swiglu(case, adapters):
    out = adapters.run_swiglu(
        d_model=case.params["d_model"],
        d_ff=case.params["d_ff"],
        w1_weight=case.weights["w1.weight"],
        w2_weight=case.weights["w2.weight"],
        w3_weight=case.weights["w3.weight"],
        in_features=case["in_features"],
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("swiglu", cases="backward")
def test_swiglu_backward(case, adapters):
    kwargs = {
        "d_model": case.params["d_model"],
        "d_ff": case.params["d_ff"],
        "w1_weight": case.weights["w1.weight"],
        "w2_weight": case.weights["w2.weight"],
        "w3_weight": case.weights["w3.weight"],
        "in_features": case["in_features"],
    }
    assert_input_gradients(adapters, case, "run_swiglu", kwargs, FAMILY.backward)
