"""Two-matrix feed-forward network: W2 gelu(W1 x), with the exact GELU."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.gradients import assert_input_gradients

FAMILY = family("positionwise_feedforward")

pytestmark = pytest.mark.family("positionwise_feedforward")


def test_positionwise_feedforward(case, adapters):
    out = adapters.run_positionwise_feedforward(
        d_model=case.params["d_model"],
        d_ff=case.params["d_ff"],
        weights=case.weights,
        in_features=case["in_features"],
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("positionwise_feedforward", cases="backward")
def test_positionwise_feedforward_backward(case, adapters):
    kwargs = {
        "d_model": case.params["d_model"],
        "d_ff": case.params["d_ff"],
        "weights": case.weights,
        "in_features": case["in_features"],
    }
    assert_input_gradients(adapters, case, "run_positionwise_feedforward", kwargs, FAMILY.backward)
