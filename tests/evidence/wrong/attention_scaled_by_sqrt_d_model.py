"""Multi-head attention whose heads divide their scores by √d_model instead of √d_k, written
as queries over √num_heads before the correct attention, in attention with and without RoPE,
the block and the model (one head: no difference)."""

import math

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
DIAGNOSED_AS = "attention_scaled_by_sqrt_d_model"
_adapters = ProjectionAdapters(lambda q, k, v, o, num_heads: (q / math.sqrt(num_heads), k, v, o))
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
