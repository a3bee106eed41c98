"""GELU written x (1 + erf(x / √2)), without the leading 0.5: twice the right output, in GELU
and in the feed-forward. Not a catalogued mistake: its failures are described by their
shape (a factor of 2)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_gelu as _correct_gelu

CAUGHT_BY = frozenset({"gelu", "positionwise_feedforward"})
ERROR_SHAPE = "factor"


def run_gelu(in_features, approximate="none"):
    return 2 * _correct_gelu(in_features, approximate)


def run_positionwise_feedforward(d_model, d_ff, weights, in_features):
    return run_gelu(in_features @ weights["w1.weight"].T) @ weights["w2.weight"].T
