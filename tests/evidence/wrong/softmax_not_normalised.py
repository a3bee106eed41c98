"""Softmax that subtracts the maximum and exponentiates but never divides by the sum."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_not_normalised"


def run_softmax(in_features, dim):
    return (in_features - in_features.amax(dim, keepdim=True)).exp()
