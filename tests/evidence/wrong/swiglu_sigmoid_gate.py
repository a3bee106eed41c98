"""SwiGLU gated by sigmoid(W1 x) instead of silu(W1 x): a SiLU that forgot its factor x."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"swiglu"})
DIAGNOSED_AS = "silu_is_sigmoid"


def run_swiglu(d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features):
    gate = torch.sigmoid(in_features @ w1_weight.T)
    return (gate * (in_features @ w3_weight.T)) @ w2_weight.T
