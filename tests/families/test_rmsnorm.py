"""RMSNorm: x / sqrt(mean(x²) + eps) · g, computed in float32, returned in the input's dtype."""

import pytest

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle, for_dtype
from tests.families.gradients import assert_input_gradients

FAMILY = family("rmsnorm")

pytestmark = pytest.mark.family("rmsnorm")


def test_rmsnorm(case, adapters):
    x = case["in_features"]
    out = adapters.run_rmsnorm(
        d_model=case.params["d_model"],
        eps=case.params["eps"],
        weights=case.weights["weight"],
        in_features=x,
    )
    assert_matches_oracle(out, case.expected, dtype=x.dtype, **for_dtype(x.dtype, FAMILY.tolerance))


@pytest.mark.family("rmsnorm", cases="backward")
def test_rmsnorm_backward(case, adapters):
    kwargs = {
        "d_model": case.params["d_model"],
        "eps": case.params["eps"],
        "weights": case.weights["weight"],
        "in_features": case["in_features"],
    }
    assert_input_gradients(adapters, case, "run_rmsnorm", kwargs, FAMILY.backward)
