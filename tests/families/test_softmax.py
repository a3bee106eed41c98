"""softmax over any dimension, exact for inputs far from zero."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.gradients import assert_input_gradients

FAMILY = family("softmax")

pytestmark = pytest.mark.family("softmax")


def test_softmax(case, adapters):
    # The input positionally, as upstream calls it.
    out = adapters.run_softmax(case["in_features"], dim=case.params["dim"])
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("softmax", cases="backward")
def test_softmax_backward(case, adapters):
    kwargs = {"in_features": case["in_features"], "dim": case.params["dim"]}
    assert_input_gradients(adapters, case, "run_softmax", kwargs, FAMILY.backward, positional=1)
