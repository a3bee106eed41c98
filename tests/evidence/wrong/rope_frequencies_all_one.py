"""RoPE whose exponent 2k/d_k is computed with integer division, torch.arange(0, d, 2) // d:
every exponent is 0, so every pair turns at frequency 1; in RoPE and everywhere it is used."""

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
DIAGNOSED_AS = "rope_frequencies_all_one"


def _rope(x, positions, theta):
    d = x.shape[-1]
    exponent = torch.arange(0, d, 2, device=x.device) // d
    angle = positions[..., None].float() * theta ** (-exponent.float())
    a, b = x[..., 0::2], x[..., 1::2]
    cos, sin = angle.cos(), angle.sin()
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


_adapters = PartsAdapters(Parts(rope=_rope))
run_rope = _adapters.run_rope
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
