"""Softmax that returns the log-probabilities (log-softmax)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})
DIAGNOSED_AS = "softmax_returns_log_softmax"


def run_softmax(in_features, dim):
    shifted = in_features - in_features.amax(dim, keepdim=True)
    return shifted - shifted.exp().sum(dim, keepdim=True).log()
