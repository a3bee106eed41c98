"""RoPE pairing x[k] with x[k + d_k/2] ("rotate half", LLaMA-family code) instead of
adjacent pairs."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, rope

CAUGHT_BY = frozenset({"rope"})


def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
    return rope(in_query_or_key, token_positions, theta, Mistakes(rope_pairing="half"))
