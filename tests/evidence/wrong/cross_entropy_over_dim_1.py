"""cross-entropy whose log-softmax runs over dim=1: the vocabulary for (batch, vocab) logits,
the sequence for (batch, seq, vocab)."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_over_dim_1"


def run_cross_entropy(inputs, targets):
    log_probs = torch.log_softmax(inputs, dim=1)
    return -log_probs.gather(-1, targets.unsqueeze(-1)).mean()
