"""The two-matrix feed-forward with ReLU, the original Transformer's activation, for GELU."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"positionwise_feedforward"})
DIAGNOSED_AS = "feedforward_relu_for_gelu"


def run_positionwise_feedforward(d_model, d_ff, weights, in_features):
    return torch.relu(in_features @ weights["w1.weight"].T) @ weights["w2.weight"].T
