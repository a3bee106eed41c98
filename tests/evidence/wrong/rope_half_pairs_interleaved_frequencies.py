"""RoPE that pairs x[i] with x[i + d_k/2] (rotate_half) while its cos and sin repeat each
frequency twice (repeat_interleave, the layout of interleaved pairs): two layouts mixed, in
RoPE and everywhere it is used."""

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
DIAGNOSED_AS = "rope_half_pairs_interleaved_frequencies"


def _rope(x, positions, theta):
    d = x.shape[-1]
    freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    angle = (positions[..., None].float() * freq).repeat_interleave(2, dim=-1)
    rotated = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], dim=-1)
    return x * angle.cos() + rotated * angle.sin()


_adapters = PartsAdapters(Parts(rope=_rope))
run_rope = _adapters.run_rope
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
