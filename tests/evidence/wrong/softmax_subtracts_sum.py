"""Softmax that subtracts the sum of the exponentials instead of dividing by it."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_subtracts_sum"


def run_softmax(in_features, dim):
    e = torch.exp(in_features - in_features.amax(dim, keepdim=True))
    return e - e.sum(dim, keepdim=True)
