"""Linear computing x @ W.reshape(d_in, d_out): a reshape where the transpose belongs, which
cuts W's rows up rather than turning them into columns. Right shapes, wrong values (for a
square W, x @ W, which linear_weight_not_transposed names)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"linear"})
DIAGNOSED_AS = frozenset({"linear_weight_reshaped", "linear_weight_not_transposed"})


def run_linear(d_in, d_out, weights, in_features):
    return in_features @ weights.reshape(d_in, d_out)
