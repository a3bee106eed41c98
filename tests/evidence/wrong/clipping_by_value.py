"""gradient clipping by value: every entry clamped to [-max, max], no norm at all."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"gradient_clipping"})
DIAGNOSED_AS = "clipping_each_element"


@torch.no_grad()
def run_gradient_clipping(parameters, max_l2_norm):
    for p in parameters:
        if p.grad is not None:
            p.grad.clamp_(-max_l2_norm, max_l2_norm)
