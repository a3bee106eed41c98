"""AdamW (Loshchilov & Hutter, 2019) in the order the assignment's handout writes it."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch


class AdamW(torch.optim.Optimizer):
    """Adam with decoupled weight decay. Per parameter, at step t (from 1)::

        m ← β₁ m + (1 − β₁) g;   v ← β₂ v + (1 − β₂) g²
        θ ← θ − lr · √(1 − β₂ᵗ) / (1 − β₁ᵗ) · m / (√v + ε)
        θ ← θ − lr · λ · θ

    The non-obvious choice is the handout's: ε is added before the bias correction and the
    decay follows the update, where ``torch.optim.AdamW`` decays first and adds ε after the
    correction (the two differ by O(lr²·λ) and O(ε) per step). State per parameter is
    ``step`` (an int), ``exp_avg`` and ``exp_avg_sq`` (like the parameter), so a checkpoint's
    ``state_dict`` round-trips. Parameters whose ``grad`` is None are skipped.
    """

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ):
        if lr < 0:
            raise ValueError(f"AdamW: lr must be ≥ 0, got lr={lr}")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"AdamW: betas must be in [0, 1), got betas={tuple(betas)}")
        if eps < 0 or weight_decay < 0:
            raise ValueError(
                f"AdamW: eps and weight_decay must be ≥ 0, got eps={eps}, "
                f"weight_decay={weight_decay}"
            )
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, (beta1, beta2) = group["lr"], group["betas"]
            eps, decay = group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("AdamW does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
                m.lerp_(p.grad, 1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                step_size = lr * math.sqrt(1 - beta2**t) / (1 - beta1**t)
                p.addcdiv_(m, v.sqrt().add_(eps), value=-step_size)
                if decay:
                    p.mul_(1 - lr * decay)
        return loss
