"""softmax without subtracting the maximum: exp overflows to inf, and inf/inf is NaN."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_without_max_shift"


def run_softmax(in_features, dim):
    e = torch.exp(in_features)
    return e / e.sum(dim=dim, keepdim=True)
