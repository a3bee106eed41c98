"""RoPE written as an einsum of x with the rotation matrix that gives both of the matrix's
axes one name (`... d, ... d d -> ... d`), which keeps its diagonal: x times cos. In RoPE
and everywhere it is used."""

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
DIAGNOSED_AS = "rope_rotation_diagonal_only"


def _rope(x, positions, theta):
    d = x.shape[-1]
    freq = theta ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)
    angle = positions[..., None].double() * freq.repeat_interleave(2)
    return x * angle.cos().to(x.dtype)


_adapters = PartsAdapters(Parts(rope=_rope))
run_rope = _adapters.run_rope
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
