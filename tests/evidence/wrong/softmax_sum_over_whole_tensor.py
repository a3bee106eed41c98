"""Softmax that subtracts the max along dim but divides by the sum of the whole tensor's
exponentials (`e.sum()`, no dim)."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_sum_over_whole_tensor"


def run_softmax(in_features, dim):
    e = torch.exp(in_features - in_features.amax(dim=dim, keepdim=True))
    return e / e.sum()
