"""The Transformer LM on inputs shorter than its context: nothing may be padded."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from tests.families.lm_call import run_lm

FAMILY = family("transformer_lm_truncated_input")

pytestmark = pytest.mark.family("transformer_lm_truncated_input")


def test_transformer_lm_truncated_input(case, adapters):
    assert case["in_indices"].shape[-1] < case.params["context_length"]
    out = run_lm(adapters, case, case["in_indices"])
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)
