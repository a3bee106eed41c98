"""Multi-head attention that splits and merges the heads with reshapes and no transpose,
(..., seq, d_model) to (..., heads, seq, d_k) and back: in attention, the block and the
model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {
        "multihead_self_attention",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "attention_heads_split_and_merged_without_transpose"


def _split(t, num_heads):
    *lead, seq, d_model = t.shape
    return t.reshape(*lead, num_heads, seq, d_model // num_heads)


def _merge(o):
    *lead, heads, seq, d_k = o.shape
    return o.reshape(*lead, seq, heads * d_k)


_adapters = PartsAdapters(Parts(split=_split, merge=_merge))
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
