"""Softmax that subtracts the max along the last dimension whatever dim is, then
normalises along dim: the shift no longer cancels where dim is not the last."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_max_over_last_dim"


def run_softmax(in_features, dim):
    e = torch.exp(in_features - in_features.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
