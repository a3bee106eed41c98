"""cross-entropy in bits: log2 where the natural log is meant."""

import math

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_in_bits"


def run_cross_entropy(inputs, targets):
    top = inputs.amax(dim=-1, keepdim=True)
    log2_normaliser = torch.log2(torch.exp(inputs - top).sum(dim=-1)) + top.squeeze(-1) / math.log(
        2
    )
    target = inputs.gather(-1, targets.unsqueeze(-1)).squeeze(-1) / math.log(2)
    return (log2_normaliser - target).mean()
