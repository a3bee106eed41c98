"""Attention that takes a mask and never applies it: every query attends to every key."""

import math

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
DIAGNOSED_AS = "attention_mask_ignored"


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    return torch.softmax(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), dim=-1) @ V
