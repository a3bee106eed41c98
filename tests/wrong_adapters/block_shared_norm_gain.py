"""A block that uses ln1's gain for both of its norms."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, block

CAUGHT_BY = frozenset({"transformer_block"})


def run_transformer_block(d_model, num_heads, d_ff, max_seq_len, theta, weights, in_features):
    return block(in_features, weights, num_heads, theta, Mistakes(shared_block_norm=True))
