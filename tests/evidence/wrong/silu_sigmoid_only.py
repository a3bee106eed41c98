"""SiLU returning sigmoid(x), forgetting the factor x."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"silu"})
DIAGNOSED_AS = "silu_is_sigmoid"


def run_silu(in_features):
    return torch.sigmoid(in_features)
