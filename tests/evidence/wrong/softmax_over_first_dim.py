"""Softmax along dimension 0, whatever `dim` is asked for."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_softmax as _correct_softmax

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_over_first_dim"


def run_softmax(in_features, dim):
    return _correct_softmax(in_features, 0)
