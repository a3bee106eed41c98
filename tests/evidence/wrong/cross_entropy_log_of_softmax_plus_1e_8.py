"""cross-entropy as -log(softmax(logits)[target] + 1e-8): right while the target's
probability is far above 1e-8, but a target whose logit trails the largest by a few dozen
costs about -log(1e-8) instead of its loss."""

import torch

from cs336_basics import softmax
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_log_of_softmax_plus_1e_8"


def run_cross_entropy(inputs, targets):
    p = softmax(inputs, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return -torch.log(p + 1e-8).mean()
