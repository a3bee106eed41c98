"""Attention scores divided by d_k instead of √d_k: a softer softmax, wrong wherever a query
sees more than one key; in attention and everywhere it is used."""

from functools import partial

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters, attention

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
DIAGNOSED_AS = "attention_scaled_by_d_k"
_adapters = PartsAdapters(Parts(attention=partial(attention, scale=1.0)))
run_scaled_dot_product_attention = _adapters.run_scaled_dot_product_attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
