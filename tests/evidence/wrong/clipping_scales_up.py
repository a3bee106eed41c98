"""gradient clipping that scales the gradients to the limit even when their norm is under it."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"gradient_clipping"})
DIAGNOSED_AS = "clipping_scales_up_below_the_limit"


@torch.no_grad()
def run_gradient_clipping(parameters, max_l2_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.sqrt(sum((g**2).sum() for g in grads))
    for g in grads:
        g.mul_(max_l2_norm / (norm + 1e-6))
