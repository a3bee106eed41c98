"""Scaled dot-product attention with any leading dims, n ≠ m, d_v ≠ d_k and boolean masks."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families import costs
from tests.families.gradients import assert_input_gradients

FAMILY = family("scaled_dot_product_attention")

pytestmark = pytest.mark.family("scaled_dot_product_attention")


def test_scaled_dot_product_attention(case, adapters):
    out = adapters.run_scaled_dot_product_attention(
        Q=case["Q"],
        K=case["K"],
        V=case["V"],
        mask=case["mask"] if case.params["mask"] else None,
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("scaled_dot_product_attention", cases="backward")
def test_scaled_dot_product_attention_backward(case, adapters):
    kwargs = {
        "Q": case["Q"],
        "K": case["K"],
        "V": case["V"],
        "mask": case["mask"] if case.params["mask"] else None,
    }
    assert_input_gradients(
        adapters, case, "run_scaled_dot_product_attention", kwargs, FAMILY.backward
    )


@pytest.mark.efficiency
@pytest.mark.hardening(costs.HARDENING)
@pytest.mark.trivial(costs.TRIVIAL)
def test_scaled_dot_product_attention_cost(adapters, request):
    costs.check_cost("scaled_dot_product_attention", adapters, request)
