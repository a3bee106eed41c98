"""Linear: y = x Wᵀ over any leading dimensions."""

import pytest
import torch

from cs336_harness.compare import assert_matches_oracle
from tests.gradients import assert_input_gradients
from tests.tolerances import LINEAR, LINEAR_BACKWARD

pytestmark = pytest.mark.family("linear")


def test_linear(case, adapters):
    out = adapters.run_linear(
        d_in=case.params["d_in"],
        d_out=case.params["d_out"],
        weights=case.weights["weight"],
        in_features=case["in_features"],
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **LINEAR)


@pytest.mark.family("linear", cases="backward")
def test_linear_backward(case, adapters):
    kwargs = {
        "d_in": case.params["d_in"],
        "d_out": case.params["d_out"],
        "weights": case.weights["weight"],
        "in_features": case["in_features"],
    }
    assert_input_gradients(adapters, case, "run_linear", kwargs, LINEAR_BACKWARD)
