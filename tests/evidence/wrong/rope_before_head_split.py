"""Multi-head attention rotating the whole d_model-wide queries and keys with RoPE before
splitting them into heads, in attention with RoPE, the block and the model (one head: no
difference)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters, rope

CAUGHT_BY = frozenset(
    {
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "rope_before_head_split"


def _rope_joined(heads, positions, theta):
    """`heads` (..., H, seq, d_k) joined into (..., seq, d_model), rotated, split again."""
    joined = heads.transpose(-2, -3).flatten(-2)
    positions = positions.squeeze(-2) if positions.ndim > 1 else positions
    rotated = rope(joined, positions, theta)
    return rotated.unflatten(-1, heads.shape[-3:-2] + heads.shape[-1:]).transpose(-2, -3)


_adapters = PartsAdapters(Parts(rope=_rope_joined))
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
