"""RoPE that pairs interleaved entries, (x[2k], x[2k+1]), but lays cos and sin out as
`cat([f, f])`, the rotate-half layout, so a pair's two entries turn by different angles:
in RoPE and everywhere it is used."""

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
DIAGNOSED_AS = "rope_frequencies_concatenated"


def _rope(x, positions, theta):
    d = x.shape[-1]
    freq = theta ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)
    angle = positions[..., None].double() * torch.cat([freq, freq])
    partner = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    return x * angle.cos().to(x.dtype) + partner * angle.sin().to(x.dtype)


_adapters = PartsAdapters(Parts(rope=_rope))
run_rope = _adapters.run_rope
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
