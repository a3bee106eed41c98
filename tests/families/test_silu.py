"""SiLU: x · sigmoid(x), elementwise."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.gradients import assert_input_gradients

FAMILY = family("silu")

pytestmark = pytest.mark.family("silu")


def test_silu(case, adapters):
    out = adapters.run_silu(case["in_features"])  # positionally, as upstream calls it
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("silu", cases="backward")
def test_silu_backward(case, adapters):
    kwargs = {"in_features": case["in_features"]}
    assert_input_gradients(adapters, case, "run_silu", kwargs, FAMILY.backward, positional=1)
