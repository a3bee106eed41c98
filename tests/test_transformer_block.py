"""The pre-norm Transformer block: h = x + attn(ln1(x)); out = h + ffn(ln2(h))."""

import pytest
import torch

from cs336_harness.compare import assert_matches_oracle
from tests.tolerances import TRANSFORMER_BLOCK

pytestmark = pytest.mark.family("transformer_block")


def test_transformer_block(case, adapters):
    out = adapters.run_transformer_block(
        d_model=case.params["d_model"],
        num_heads=case.params["num_heads"],
        d_ff=case.params["d_ff"],
        max_seq_len=case.params["max_seq_len"],
        theta=case.params["theta"],
        weights=case.weights,
        in_features=case["in_features"],
    )
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **TRANSFORMER_BLOCK)
