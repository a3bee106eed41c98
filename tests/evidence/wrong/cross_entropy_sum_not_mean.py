"""cross-entropy summed over the batch instead of averaged."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_summed"


def run_cross_entropy(inputs, targets):
    shifted = inputs - inputs.amax(dim=-1, keepdim=True)
    log_probs = shifted - torch.log(torch.exp(shifted).sum(dim=-1, keepdim=True))
    return -log_probs.gather(-1, targets.unsqueeze(-1)).sum()
