"""RoPE whose frequencies are written theta ** -2 * k / d, which Python reads as
(Θ^-2) · k / d: angles so small that the output is nearly x. In RoPE alone, where the
catalog names it (in attention it cannot be told from no RoPE at all)."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rope"})
DIAGNOSED_AS = "rope_exponent_precedence"


def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
    x = in_query_or_key
    k = torch.arange(d_k // 2, dtype=torch.float32, device=x.device)
    angle = token_positions[..., None].float() * (theta**-2 * k / d_k)
    a, b = x[..., 0::2], x[..., 1::2]
    cos, sin = angle.cos(), angle.sin()
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
