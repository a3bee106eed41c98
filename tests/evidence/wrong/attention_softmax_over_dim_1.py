"""Attention whose softmax is taken over dim=1: the heads of (batch, heads, queries, keys)
scores (the queries of 3-D ones), in attention and everywhere it is used."""

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
# Over the queries where the scores are 3-D: the same output as that mistake's.
DIAGNOSED_AS = frozenset({"attention_softmax_over_dim_1", "attention_softmax_over_queries"})


def _attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return torch.softmax(scores, dim=1) @ V


_adapters = PartsAdapters(Parts(attention=_attention))
run_scaled_dot_product_attention = _attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
