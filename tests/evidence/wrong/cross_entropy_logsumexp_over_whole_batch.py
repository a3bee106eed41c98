"""cross-entropy whose log-sum-exp runs over every logit of the batch (torch.logsumexp over
all dims), not over each position's vocabulary."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_logsumexp_over_whole_batch"


def run_cross_entropy(inputs, targets):
    normaliser = torch.logsumexp(inputs.flatten(), dim=0)
    target = inputs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (normaliser - target).mean()
