"""RoPE applied under `torch.no_grad()` ("it has no parameters, so it needs no autograd"):
the same output, detached from its input, so nothing below the rotation would learn."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_rope as _correct_rope

CAUGHT_BY = frozenset({"rope"})


def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
    with torch.no_grad():
        return _correct_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions)
