"""gradient clipping by the L1 norm (the sum of absolute values) instead of the L2 norm."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"gradient_clipping"})
DIAGNOSED_AS = "clipping_l1_norm"


@torch.no_grad()
def run_gradient_clipping(parameters, max_l2_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = sum(g.abs().sum() for g in grads)
    if norm > max_l2_norm:
        for g in grads:
            g.mul_(max_l2_norm / (norm + 1e-6))
