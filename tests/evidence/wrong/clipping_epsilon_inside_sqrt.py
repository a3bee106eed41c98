"""gradient clipping whose norm adds the epsilon under the square root (a real student's),
so a norm of 2e-6 reads as about 1e-3."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"gradient_clipping"})
DIAGNOSED_AS = "clipping_epsilon_inside_sqrt"


@torch.no_grad()
def run_gradient_clipping(parameters, max_l2_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.sqrt(sum((g**2).sum() for g in grads) + 1e-6)
    if norm > max_l2_norm:
        for g in grads:
            g.mul_(max_l2_norm / (norm + 1e-6))
