"""Attention that takes the softmax over every key and zeroes the masked probabilities
afterwards, so a query's weights no longer sum to 1; the mask belongs before the softmax."""

import math

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
ERROR_SHAPE = "row_factor"


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    probs = torch.softmax(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), dim=-1)
    return (probs if mask is None else probs * mask) @ V
