"""LayerNorm: (x − mean) / sqrt(var + eps) · g + b, biased variance, computed in float32."""

import pytest

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle, for_dtype
from tests.families.gradients import assert_input_gradients

FAMILY = family("layernorm")

pytestmark = pytest.mark.family("layernorm")


def test_layernorm(case, adapters):
    x = case["in_features"]
    out = adapters.run_layernorm(
        d_model=case.params["d_model"],
        eps=case.params["eps"],
        weights=case.weights["weight"],
        biases=case.weights["bias"],
        in_features=x,
    )
    assert_matches_oracle(out, case.expected, dtype=x.dtype, **for_dtype(x.dtype, FAMILY.tolerance))


@pytest.mark.family("layernorm", cases="backward")
def test_layernorm_backward(case, adapters):
    kwargs = {
        "d_model": case.params["d_model"],
        "eps": case.params["eps"],
        "weights": case.weights["weight"],
        "biases": case.weights["bias"],
        "in_features": case["in_features"],
    }
    assert_input_gradients(adapters, case, "run_layernorm", kwargs, FAMILY.backward)
