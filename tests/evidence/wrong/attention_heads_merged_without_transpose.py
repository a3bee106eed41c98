"""Multi-head attention that splits the heads correctly and merges them with
`reshape(..., seq, d_model)` and no transpose: in attention, the block and the model."""

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
DIAGNOSED_AS = "attention_heads_merged_without_transpose"


def _merge(o):
    *lead, heads, seq, d_k = o.shape
    return o.reshape(*lead, seq, heads * d_k)


_adapters = PartsAdapters(Parts(merge=_merge))
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
