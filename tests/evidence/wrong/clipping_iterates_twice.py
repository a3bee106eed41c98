"""gradient clipping that iterates `parameters` twice, once for the norm and once to scale:
right for a list, but a generator (`model.parameters()`) is empty the second time, so
nothing is clipped."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"gradient_clipping"})


@torch.no_grad()
def run_gradient_clipping(parameters, max_l2_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.sqrt(sum((g**2).sum() for g in grads))
    if norm > max_l2_norm:
        for p in parameters:
            if p.grad is not None:
                p.grad.mul_(max_l2_norm / (norm + 1e-6))
