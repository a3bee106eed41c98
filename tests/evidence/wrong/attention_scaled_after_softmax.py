"""Attention that divides by √d_k after the softmax (the weights times V, then / √d_k), so
the softmax sees unscaled scores; in attention and everywhere it is used."""

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
DIAGNOSED_AS = "attention_scaled_after_softmax"


def _attention(q, k, v, mask):
    scores = q @ k.transpose(-1, -2)
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return torch.nan_to_num(torch.softmax(scores, dim=-1)) @ v / math.sqrt(q.shape[-1])


_adapters = PartsAdapters(Parts(attention=_attention))
run_scaled_dot_product_attention = _adapters.run_scaled_dot_product_attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
