"""RoPE with Θ hard-coded to 10000, ignoring the theta argument."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import rope

CAUGHT_BY = frozenset({"rope"})
DIAGNOSED_AS = "rope_theta_fixed"


def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
    return rope(in_query_or_key, token_positions, 10000.0)
