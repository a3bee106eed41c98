"""softmax over any dimension, exact for inputs far from zero."""

import pytest
import torch

from cs336_harness.compare import assert_matches_oracle
from tests.tolerances import SOFTMAX

pytestmark = pytest.mark.family("softmax")


def test_softmax(case, adapters):
    out = adapters.run_softmax(in_features=case["in_features"], dim=case.params["dim"])
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **SOFTMAX)
