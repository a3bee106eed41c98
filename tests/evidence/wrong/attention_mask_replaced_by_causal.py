"""Scaled dot-product attention that ignores the mask it is given and applies a causal mask
of its own, tril(ones(queries, keys)): right only where the mask given is that one."""

import math

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
DIAGNOSED_AS = "attention_mask_replaced_by_causal"


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    causal = torch.ones(Q.shape[-2], K.shape[-2], dtype=torch.bool, device=Q.device).tril()
    scores = (Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])).masked_fill(~causal, -math.inf)
    return torch.softmax(scores, dim=-1) @ V
