"""cosine schedule warming up as (it + 1) / warmup_iters, so it = 0 is not 0."""

import math

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"learning_rate_schedule"})
DIAGNOSED_AS = "schedule_warmup_off_by_one"


def run_get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters,
                               cosine_cycle_iters):  # fmt: skip
    if it < warmup_iters:
        return (it + 1) / warmup_iters * max_learning_rate
    if it > cosine_cycle_iters:
        return min_learning_rate
    phase = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
    return min_learning_rate + 0.5 * (1 + math.cos(math.pi * phase)) * (
        max_learning_rate - min_learning_rate
    )
