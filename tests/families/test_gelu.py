"""FAMILY.tolerance: x · Φ(x) exactly (erf), or GPT-2's tanh approximation when asked for it."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.gradients import assert_input_gradients

FAMILY = family("gelu")

pytestmark = pytest.mark.family("gelu")


def test_gelu(case, adapters):
    out = adapters.run_gelu(in_features=case["in_features"], approximate=case.params["approximate"])
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("gelu", cases="backward")
def test_gelu_backward(case, adapters):
    kwargs = {"in_features": case["in_features"], "approximate": case.params["approximate"]}
    assert_input_gradients(adapters, case, "run_gelu", kwargs, FAMILY.backward)
