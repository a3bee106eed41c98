"""RoPE that rotates by 0..seq-1 whatever token_positions says."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, rope

CAUGHT_BY = frozenset({"rope"})


def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
    return rope(in_query_or_key, token_positions, theta, Mistakes(ignore_positions=True))
