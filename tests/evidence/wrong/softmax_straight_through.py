"""A straight-through softmax: the softmax's value with the identity's gradient. Written as
`s.detach() + (x - x.detach())` rather than `x + (s - x).detach()`, whose rounding at
x = 1000 would already fail the forward tests: this one's output is the softmax exactly."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"softmax"})


def run_softmax(in_features, dim):
    x = in_features
    return torch.softmax(x, dim=dim).detach() + (x - x.detach())
