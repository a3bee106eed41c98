"""Linear: y = x Wᵀ over any leading dimensions."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.gradients import assert_input_gradients

FAMILY = family("linear")

pytestmark = pytest.mark.family("linear")


def test_linear(case, adapters):
    out = adapters.run_linear(
        d_in=case.params["d_in"],
        d_out=case.params["d_out"],
        weights=case.weights["weight"],
        in_features=case["in_features"],
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("linear", cases="backward")
def test_linear_backward(case, adapters):
    kwargs = {
        "d_in": case.params["d_in"],
        "d_out": case.params["d_out"],
        "weights": case.weights["weight"],
        "in_features": case["in_features"],
    }
    assert_input_gradients(adapters, case, "run_linear", kwargs, FAMILY.backward)
