"""softmax always over the last dimension, whatever dim is asked for."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_over_last_dim"


def run_softmax(in_features, dim):
    shifted = in_features - in_features.amax(dim=-1, keepdim=True)
    e = torch.exp(shifted)
    return e / e.sum(dim=-1, keepdim=True)
