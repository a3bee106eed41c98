"""Attention that multiplies the scores by the mask instead of filling the masked ones with
-inf: a masked key's score becomes 0, which the softmax still weighs. The same output as
filling them with 0, the mistake it is diagnosed as."""

import math

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
DIAGNOSED_AS = "attention_mask_filled_with_zero"


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores * mask
    return torch.softmax(scores, dim=-1) @ V
