"""A causal mask built as triu(ones, diagonal=1), the positions to hide, and used as the
positions to keep: each query sees only the keys after it and the last one none (its
weights are zeros here), in multi-head attention, the block and the model."""

import torch

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
DIAGNOSED_AS = "attention_causal_mask_strict_upper_triangle"
_adapters = PartsAdapters(
    Parts(mask=lambda seq: torch.ones(seq, seq, dtype=torch.bool).triu(diagonal=1))
)
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
