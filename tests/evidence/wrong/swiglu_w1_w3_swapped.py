"""SwiGLU with the gate on W3 instead of W1: W2 (W1 x ⊙ silu(W3 x))."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"swiglu"})
DIAGNOSED_AS = "swiglu_w1_w3_swapped"


def run_swiglu(d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features):
    gate = in_features @ w3_weight.T
    return (gate * torch.sigmoid(gate) * (in_features @ w1_weight.T)) @ w2_weight.T
