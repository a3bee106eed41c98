"""RoPE whose pairs count from 1, Θ^(-2k/d_k) for k = 1 … d_k/2 (torch.arange(1, d/2 + 1)),
so the first pair no longer turns at frequency 1; in RoPE and everywhere it is used."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {
        "rope",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "rope_frequencies_from_one"


def _rope(x, positions, theta):
    d = x.shape[-1]
    k = torch.arange(1, d // 2 + 1, dtype=torch.float32, device=x.device)
    angle = positions[..., None].float() * theta ** (-2 * k / d)
    a, b = x[..., 0::2], x[..., 1::2]
    cos, sin = angle.cos(), angle.sin()
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


_adapters = PartsAdapters(Parts(rope=_rope))
run_rope = _adapters.run_rope
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
