"""GELU as x · sigmoid(1.702 x), the "quick GELU" approximation, whichever form is asked for."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"gelu", "positionwise_feedforward"})
DIAGNOSED_AS = "gelu_is_x_sigmoid_1702x"


def run_gelu(in_features, approximate="none"):
    return in_features * torch.sigmoid(1.702 * in_features)


def run_positionwise_feedforward(d_model, d_ff, weights, in_features):
    return run_gelu(in_features @ weights["w1.weight"].T) @ weights["w2.weight"].T
