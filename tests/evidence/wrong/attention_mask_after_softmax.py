"""Attention that takes the softmax over every key and zeroes the masked probabilities
afterwards, so a query's weights no longer sum to 1; the mask belongs before the softmax. In
attention and everywhere it is used (the causal mask of multi-head attention, the block and
the model)."""

import math

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

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
DIAGNOSED_AS = "attention_mask_after_softmax"


def _attention(Q, K, V, mask=None):
    probs = torch.softmax(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), dim=-1)
    return (probs if mask is None else probs * mask) @ V


_adapters = PartsAdapters(Parts(attention=_attention))
run_scaled_dot_product_attention = _attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
