"""cross-entropy as -log(softmax(logits)[target]): right while the target's probability is
representable, but when its logit trails the largest by a few hundred, the probability
underflows to 0 in float32 and the loss is inf."""

import torch

from cs336_basics import softmax
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_log_of_softmax"


def run_cross_entropy(inputs, targets):
    p = softmax(inputs, dim=-1)
    return -torch.log(p.gather(-1, targets.unsqueeze(-1)).squeeze(-1)).mean()
