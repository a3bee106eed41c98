"""A Linear that multiplies by `self.weight.data`: the same output and input gradient, but
the weight is no longer in the graph, so it gets no gradient and never learns."""

from cs336_basics import Linear
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"linear"})


class _DataLinear(Linear):
    def forward(self, x):
        return x @ self.weight.data.T


def run_linear(d_in, d_out, weights, in_features):
    layer = _DataLinear(d_in, d_out, device=in_features.device, dtype=in_features.dtype)
    layer.load_state_dict({"weight": weights})
    return layer(in_features)
