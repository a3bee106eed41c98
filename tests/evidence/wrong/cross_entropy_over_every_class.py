"""cross-entropy that averages -log softmax over the whole vocabulary, never picking the
target's entry."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_over_every_class"


def run_cross_entropy(inputs, targets):
    return -torch.log_softmax(inputs, dim=-1).mean()
