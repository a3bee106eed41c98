"""Multi-head attention that splits heads right but merges them with
`'... h s d -> ... s (d h)'`, interleaving their features: the same as reading the output
projection's columns in that order. In attention with and without RoPE, the block and the
model (one head: no difference)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import ProjectionAdapters

CAUGHT_BY = frozenset(
    {
        "multihead_self_attention",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "attention_heads_merged_feature_major"


def _merged_feature_major(q, k, v, o, num_heads):
    d_model = o.shape[1]
    order = [j * num_heads + h for h in range(num_heads) for j in range(d_model // num_heads)]
    return q, k, v, o[:, order]


_adapters = ProjectionAdapters(_merged_feature_major)
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
