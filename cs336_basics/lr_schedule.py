"""The learning rate at each step: linear warm-up, cosine decay, then a constant floor."""

from __future__ import annotations

import math


def cosine_lr_schedule(
    it: int,
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
) -> float:
    """``it / warmup_iters · max`` while warming up; from ``max`` down to ``min`` along half a
    cosine until ``cosine_cycle_iters``; ``min`` after it. ``warmup_iters = 0`` starts the
    cosine at once (no division by zero).
    """
    if it < 0:
        raise ValueError(f"cosine_lr_schedule: it must be ≥ 0, got {it}")
    if not 0 <= warmup_iters <= cosine_cycle_iters:
        raise ValueError(
            "cosine_lr_schedule: need 0 ≤ warmup_iters ≤ cosine_cycle_iters, got "
            f"warmup_iters={warmup_iters}, cosine_cycle_iters={cosine_cycle_iters}"
        )
    if it < warmup_iters:
        return it / warmup_iters * max_learning_rate
    if it > cosine_cycle_iters:
        return min_learning_rate
    span = cosine_cycle_iters - warmup_iters
    progress = (it - warmup_iters) / span if span else 1.0
    return min_learning_rate + 0.5 * (1 + math.cos(math.pi * progress)) * (
        max_learning_rate - min_learning_rate
    )
