"""Attention with its probabilities detached: the same output, but Q and K get no gradient
(V still does)."""

import math

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is None:
        return torch.softmax(scores, dim=-1).detach() @ V
    probs = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)
    return (probs * mask).detach() @ V
