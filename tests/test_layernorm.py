"""LayerNorm: (x − mean) / sqrt(var + eps) · g + b, biased variance, computed in float32."""

import pytest

from cs336_harness.compare import assert_matches_oracle
from tests.tolerances import LAYERNORM, for_dtype

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
    assert_matches_oracle(out, case.expected, dtype=x.dtype, **for_dtype(x.dtype, LAYERNORM))
