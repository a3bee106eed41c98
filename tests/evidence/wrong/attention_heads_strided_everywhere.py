"""Heads taken as strided features (h, h+H, ...) of the projections in every component with
multi-head attention: with and without RoPE, in the block and in the model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset(
    {
        "multihead_self_attention",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "attention_heads_strided"
_adapters = MistakenAdapters(Mistakes(strided_heads=True))
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
