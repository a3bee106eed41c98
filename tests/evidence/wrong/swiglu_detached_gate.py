"""SwiGLU whose gate silu(W1 x) is detached: the same output, but the input's gradient
comes through W3 x alone."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"swiglu"})


def run_swiglu(d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features):
    gate = torch.nn.functional.silu(in_features @ w1_weight.T).detach()
    return (gate * (in_features @ w3_weight.T)) @ w2_weight.T
