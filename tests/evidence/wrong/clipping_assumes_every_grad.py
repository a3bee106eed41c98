"""gradient clipping that reads p.grad of every parameter, even one that has none."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"gradient_clipping"})


@torch.no_grad()
def run_gradient_clipping(parameters, max_l2_norm):
    params = list(parameters)
    norm = torch.sqrt(sum((p.grad**2).sum() for p in params))
    if norm > max_l2_norm:
        for p in params:
            p.grad.mul_(max_l2_norm / (norm + 1e-6))
