"""Linear computing on `in_features.detach()`: the same output, and its weight still gets a
gradient, but none reaches the input (so no layer below it would learn)."""

from cs336_basics import Linear
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"linear"})


def run_linear(d_in, d_out, weights, in_features):
    layer = Linear(d_in, d_out, device=in_features.device, dtype=in_features.dtype)
    layer.load_state_dict({"weight": weights})
    return layer(in_features.detach())
