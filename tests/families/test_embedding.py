"""Embedding: rows of the table picked by integer ids of any shape."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.gradients import assert_input_gradients

FAMILY = family("embedding")

pytestmark = pytest.mark.family("embedding")


def test_embedding(case, adapters):
    out = adapters.run_embedding(
        vocab_size=case.params["vocab_size"],
        d_model=case.params["d_model"],
        weights=case.weights["weight"],
        token_ids=case["token_ids"],
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.family("embedding", cases="backward")
def test_embedding_backward(case, adapters):
    kwargs = {
        "vocab_size": case.params["vocab_size"],
        "d_model": case.params["d_model"],
        "weights": case.weights["weight"],
        "token_ids": case["token_ids"],
    }
    assert_input_gradients(adapters, case, "run_embedding", kwargs, FAMILY.backward)
