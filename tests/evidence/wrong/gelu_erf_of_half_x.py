"""Exact GELU with erf(x / 2) for erf(x / √2), in GELU and in the feed-forward built on it
(the tanh form is right)."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_gelu as _correct_gelu

CAUGHT_BY = frozenset({"gelu", "positionwise_feedforward"})
DIAGNOSED_AS = "gelu_erf_of_half_x"


def run_gelu(in_features, approximate="none"):
    if approximate != "none":
        return _correct_gelu(in_features, approximate)
    return 0.5 * in_features * (1 + torch.erf(in_features / 2))


def run_positionwise_feedforward(d_model, d_ff, weights, in_features):
    return run_gelu(in_features @ weights["w1.weight"].T) @ weights["w2.weight"].T
