"""cosine_cycle_iters read as the length of the cosine after warm-up: the cosine ends at
warmup_iters + cosine_cycle_iters."""

import math

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"learning_rate_schedule"})
DIAGNOSED_AS = "schedule_cycle_counted_after_warmup"


def run_get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters,
                               cosine_cycle_iters):  # fmt: skip
    if it < warmup_iters:
        return it / warmup_iters * max_learning_rate
    if it > warmup_iters + cosine_cycle_iters:
        return min_learning_rate
    phase = (it - warmup_iters) / cosine_cycle_iters
    return min_learning_rate + 0.5 * (1 + math.cos(math.pi * phase)) * (
        max_learning_rate - min_learning_rate
    )
