"""Softmax of the flattened tensor, reshaped back: every element normalised against all the
others, not along dim."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_over_whole_tensor"


def run_softmax(in_features, dim):
    return torch.softmax(in_features.flatten(), dim=0).reshape(in_features.shape)
