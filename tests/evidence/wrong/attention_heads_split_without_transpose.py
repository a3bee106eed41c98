"""Multi-head attention that splits the heads with `reshape(..., heads, seq, d_k)` and no
transpose (and merges them correctly): in attention, the block and the model."""

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
DIAGNOSED_AS = "attention_heads_split_without_transpose"


def _split(t, num_heads):
    *lead, seq, d_model = t.shape
    return t.reshape(*lead, num_heads, seq, d_model // num_heads)


_adapters = PartsAdapters(Parts(split=_split))
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
