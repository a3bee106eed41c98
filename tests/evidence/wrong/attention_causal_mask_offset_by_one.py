"""A causal mask built as tril(ones, diagonal=1): each query also sees the next key, in
multi-head attention, the block and the model."""

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
DIAGNOSED_AS = "attention_causal_mask_offset_by_one"
_adapters = PartsAdapters(
    Parts(mask=lambda seq: torch.ones(seq, seq, dtype=torch.bool).tril(diagonal=1))
)
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
