"""SiLU: x · sigmoid(x), elementwise."""

import pytest
import torch

from cs336_harness.compare import assert_matches_oracle
from tests.tolerances import ELEMENTWISE

pytestmark = pytest.mark.family("silu")


def test_silu(case, adapters):
    out = adapters.run_silu(in_features=case["in_features"])
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **ELEMENTWISE)
