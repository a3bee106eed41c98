"""Gradient clipping by the global L2 norm of every gradient together."""

from __future__ import annotations

from collections.abc import Iterable

import torch

# The handout's ε: keeps the scale finite for an all-zero gradient.
EPS = 1e-6


@torch.no_grad()
def clip_gradients(parameters: Iterable[torch.nn.Parameter], max_l2_norm: float) -> None:
    """Scale every ``p.grad`` in place by ``max_l2_norm / (‖g‖₂ + 1e-6)`` when ``‖g‖₂`` exceeds
    ``max_l2_norm``, where ``‖g‖₂`` is the norm of all gradients concatenated (not one norm
    per parameter). Parameters without a gradient are skipped; under the limit nothing
    changes.
    """
    if max_l2_norm < 0:
        raise ValueError(f"clip_gradients: max_l2_norm must be ≥ 0, got {max_l2_norm}")
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    # Squares summed in float32 at least, so half-precision gradients cannot overflow.
    total = torch.stack([g.float().square().sum() for g in grads]).sum().sqrt()
    if total > max_l2_norm:
        scale = max_l2_norm / (total + EPS)
        for g in grads:
            g.mul_(scale.to(g.dtype))
