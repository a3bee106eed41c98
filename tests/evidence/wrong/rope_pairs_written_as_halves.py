"""RoPE that rotates the right pairs (x[2k], x[2k+1]) but writes the results back as two
halves, all rotated first entries and then all second ones, instead of interleaved. Attention
cannot see it (queries and keys are reordered alike, so their dot products are the same);
RoPE's own output can."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rope"})
ERROR_SHAPE = "axis_permuted"


def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
    x = in_query_or_key
    k = torch.arange(0, d_k, 2, dtype=torch.float64)
    angle = token_positions[..., None].double() * theta ** (-k / d_k)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
