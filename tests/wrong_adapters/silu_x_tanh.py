"""SiLU written as x · tanh(x) (a confusion with Mish-like forms), in SiLU and in SwiGLU's gate."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"silu", "swiglu"})
DIAGNOSED_AS = "silu_is_x_tanh"


def run_silu(in_features):
    return in_features * torch.tanh(in_features)


def run_swiglu(d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features):
    return (run_silu(in_features @ w1_weight.T) * (in_features @ w3_weight.T)) @ w2_weight.T
