"""Linear computing x W instead of x Wᵀ: a shape error, or wrong values for square W."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"linear"})
DIAGNOSED_AS = "linear_weight_not_transposed"


def run_linear(d_in, d_out, weights, in_features):
    return in_features @ weights
