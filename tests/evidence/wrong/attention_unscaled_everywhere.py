"""Attention scores without the 1/sqrt(d_k) scale in every component that attends:
attention itself, multi-head attention with and without RoPE, the block and the model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset(
    {
        "scaled_dot_product_attention",
        "multihead_self_attention",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "attention_unscaled"
_adapters = MistakenAdapters(Mistakes(attention_scale="none"))
run_scaled_dot_product_attention = _adapters.run_scaled_dot_product_attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
