"""Attention that applies the mask transposed, mask[key, query]: query i attends key j where
mask[j, i] is True. No catalogued mistake; its failures on square masks open with that
shape of error (the others cannot run: their masks do not transpose into the scores)."""

import math

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
ERROR_SHAPE = "masking"


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask.transpose(-1, -2), -math.inf)
    return torch.nan_to_num(torch.softmax(scores, dim=-1)) @ V
