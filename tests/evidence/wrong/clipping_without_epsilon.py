"""gradient clipping by max / ‖g‖, without the handout's 1e-6."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"gradient_clipping"})
DIAGNOSED_AS = "clipping_without_epsilon"


@torch.no_grad()
def run_gradient_clipping(parameters, max_l2_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.sqrt(sum((g**2).sum() for g in grads))
    if norm > max_l2_norm:
        for g in grads:
            g.mul_(max_l2_norm / norm)
