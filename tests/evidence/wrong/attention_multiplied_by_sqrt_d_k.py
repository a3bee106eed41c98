"""Attention that multiplies the scores by √d_k instead of dividing by it, in attention,
multi-head attention and the block. Not in the LM, where the catalog does not name it: the
scores d_k times too large saturate the softmax of a stacked model, whose output then
parts from the float64 variant (seed 3) or equals `attention_unscaled`'s (seeds 6, 7)."""

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
    }
)
DIAGNOSED_AS = "attention_multiplied_by_sqrt_d_k"


def _attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-1, -2) * math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return torch.nan_to_num(torch.softmax(scores, dim=-1)) @ V


_adapters = PartsAdapters(Parts(attention=_attention))
run_scaled_dot_product_attention = _attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
