"""RoPE: adjacent pairs (x[2k], x[2k+1]) rotated by position · Θ^(−2k/d_k)."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.gradients import assert_input_gradients

FAMILY = family("rope")

pytestmark = pytest.mark.family("rope")


def test_rope(case, adapters):
    out = adapters.run_rope(
        case.params["d_k"],  # positionally, as upstream calls it
        theta=case.params["theta"],
        max_seq_len=case.params["max_seq_len"],
        in_query_or_key=case["in_query_or_key"],
        token_positions=case["token_positions"],
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("rope", cases="backward")
def test_rope_backward(case, adapters):
    kwargs = {
        "d_k": case.params["d_k"],
        "theta": case.params["theta"],
        "max_seq_len": case.params["max_seq_len"],
        "in_query_or_key": case["in_query_or_key"],
        "token_positions": case["token_positions"],
    }
    assert_input_gradients(adapters, case, "run_rope", kwargs, FAMILY.backward, positional=1)
