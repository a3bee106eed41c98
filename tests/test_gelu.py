"""GELU: x · Φ(x) exactly (erf), or GPT-2's tanh approximation when asked for it."""

import pytest
import torch

from cs336_harness.compare import assert_matches_oracle
from tests.tolerances import GELU

pytestmark = pytest.mark.family("gelu")


def test_gelu(case, adapters):
    out = adapters.run_gelu(in_features=case["in_features"], approximate=case.params["approximate"])
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **GELU)
