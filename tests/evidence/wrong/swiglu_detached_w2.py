"""SwiGLU computed with the matrices as given, but `w2_weight.detach()`: the same output and
input gradient, and W1, W3 learn, but the output projection W2 gets no gradient."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"swiglu"})


def run_swiglu(d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features):
    gate = torch.nn.functional.silu(in_features @ w1_weight.T)
    return (gate * (in_features @ w3_weight.T)) @ w2_weight.detach().T
