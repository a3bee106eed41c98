"""cross-entropy summed over every position and divided by the batch size (the first
dimension), which is the mean only for 2-D logits."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_over_first_dim"


def run_cross_entropy(inputs, targets):
    log_probs = torch.log_softmax(inputs, dim=-1)
    return -log_probs.gather(-1, targets.unsqueeze(-1)).sum() / inputs.shape[0]
