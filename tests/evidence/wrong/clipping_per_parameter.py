"""gradient clipping with one norm per parameter instead of one global norm."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"gradient_clipping"})
DIAGNOSED_AS = "clipping_per_parameter"


@torch.no_grad()
def run_gradient_clipping(parameters, max_l2_norm):
    for p in parameters:
        if p.grad is not None:
            norm = p.grad.norm()
            if norm > max_l2_norm:
                p.grad.mul_(max_l2_norm / (norm + 1e-6))
