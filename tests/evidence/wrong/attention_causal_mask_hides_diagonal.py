"""A causal mask built with `tril(diagonal=-1)`: each query is also hidden from its own
position (the first query sees nothing and gets zeros), in multi-head attention, the block
and the model."""

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
DIAGNOSED_AS = "attention_causal_mask_hides_diagonal"
_adapters = PartsAdapters(Parts(mask=lambda seq: torch.ones(seq, seq, dtype=torch.bool).tril(-1)))
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
