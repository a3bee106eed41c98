"""A softmax that subtracts the maximum from its input in place (`x.sub_(max)`): the right
output, but the caller's tensor now holds the shifted values."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})


def run_softmax(in_features, dim):
    x = in_features.sub_(in_features.amax(dim=dim, keepdim=True))
    e = x.exp()
    return e / e.sum(dim=dim, keepdim=True)
