"""Attention scores divided by d_k instead of √d_k: a softer softmax, wrong wherever a query
sees more than one key."""

import math

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
ERROR_SHAPE = frozenset({"generic", "some_indices"})


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-1, -2) / Q.shape[-1]
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    probs = torch.softmax(scores, dim=-1)
    return torch.nan_to_num(probs) @ V
