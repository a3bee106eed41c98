"""cross-entropy as log Σ exp(x) − x[target] without taking the max out first."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_without_max_shift"


def run_cross_entropy(inputs, targets):
    log_normaliser = torch.log(torch.exp(inputs).sum(dim=-1))
    target = inputs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (log_normaliser - target).mean()
