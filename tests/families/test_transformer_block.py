"""The pre-norm Transformer block: h = x + attn(ln1(x)); out = h + ffn(ln2(h))."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from cs336_harness.judging.diagnosis.first_difference import (
    in_transformer_block,
    reported_on_failure,
)
from tests.families import costs
from tests.families.gradients import assert_input_gradients

FAMILY = family("transformer_block")

pytestmark = pytest.mark.family("transformer_block")


def test_transformer_block(case, adapters):
    out = adapters.run_transformer_block(
        d_model=case.params["d_model"],
        num_heads=case.params["num_heads"],
        d_ff=case.params["d_ff"],
        max_seq_len=case.params["max_seq_len"],
        theta=case.params["theta"],
        weights=case.weights,
        in_features=case["in_features"],
    )
    # On a failure, also say which sublayer of get_transformer_block's module first differs.
    with reported_on_failure(lambda: in_transformer_block(adapters, case, **FAMILY.tolerance)):
        assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("transformer_block", cases="backward")
def test_transformer_block_backward(case, adapters):
    kwargs = {
        "d_model": case.params["d_model"],
        "num_heads": case.params["num_heads"],
        "d_ff": case.params["d_ff"],
        "max_seq_len": case.params["max_seq_len"],
        "theta": case.params["theta"],
        "weights": case.weights,
        "in_features": case["in_features"],
    }
    assert_input_gradients(adapters, case, "run_transformer_block", kwargs, FAMILY.backward)


@pytest.mark.efficiency
@pytest.mark.hardening(costs.HARDENING)
@pytest.mark.trivial(costs.TRIVIAL)
def test_transformer_block_cost(adapters, request):
    costs.check_cost("transformer_block", adapters, request)
