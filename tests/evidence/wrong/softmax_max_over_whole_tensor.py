"""Softmax that subtracts the largest element of the whole tensor (`x.max()`, no dim): the
same function until a slice lies far below that element, whose exponentials then underflow to
zeros, and 0/0 is NaN."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_max_over_whole_tensor"


def run_softmax(in_features, dim):
    e = torch.exp(in_features - in_features.max())
    return e / e.sum(dim, keepdim=True)
