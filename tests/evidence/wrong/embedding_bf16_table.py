"""An embedding table kept in bfloat16 and cast back: rows come back rounded."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"embedding"})
DIAGNOSED_AS = "embedding_table_in_bfloat16"


def run_embedding(vocab_size, d_model, weights, token_ids):
    return weights.to(torch.bfloat16)[token_ids].to(weights.dtype)
