"""Attention that fills the masked scores with 0 instead of -inf (`masked_fill(~mask, 0)`),
so masked keys keep the weight exp(0): in attention and everywhere it is used."""

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
DIAGNOSED_AS = "attention_mask_filled_with_zero"


def _attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, 0.0)
    return torch.softmax(scores, dim=-1) @ V


_adapters = PartsAdapters(Parts(attention=_attention))
run_scaled_dot_product_attention = _attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
