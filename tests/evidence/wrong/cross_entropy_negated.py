"""cross-entropy that returns the mean log-probability of the targets: the minus sign left out."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_negated"


def run_cross_entropy(inputs, targets):
    log_probs = torch.log_softmax(inputs, dim=-1)
    return log_probs.gather(-1, targets.unsqueeze(-1)).mean()
