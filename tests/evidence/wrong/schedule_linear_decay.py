"""the schedule decays linearly from max to min after warm-up instead of along a half cosine."""

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"learning_rate_schedule"})
DIAGNOSED_AS = "schedule_linear_decay"


def run_get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters,
                               cosine_cycle_iters):  # fmt: skip
    if it < warmup_iters:
        return it / warmup_iters * max_learning_rate
    if it > cosine_cycle_iters:
        return min_learning_rate
    phase = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
    return max_learning_rate - phase * (max_learning_rate - min_learning_rate)
