"""Attention scores divided by the square root of the number of keys, K.shape[-2], where
d_k, K.shape[-1], belongs; in attention and everywhere it is used (right only where the
sequence is d_k long). Where the sequence is d_model long, the output is a scale by
√d_model's, which attention_scaled_by_sqrt_d_model names: one output under two names."""

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
DIAGNOSED_AS = frozenset({"attention_scaled_by_sqrt_num_keys", "attention_scaled_by_sqrt_d_model"})


def _attention(q, k, v, mask):
    scores = q @ k.transpose(-1, -2) / math.sqrt(k.shape[-2])
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return torch.nan_to_num(torch.softmax(scores, dim=-1)) @ v


_adapters = PartsAdapters(Parts(attention=_attention))
run_scaled_dot_product_attention = _adapters.run_scaled_dot_product_attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
