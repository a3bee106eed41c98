"""Known mistakes in the training half: cross-entropy, gradient clipping, AdamW and the
learning-rate schedule."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cs336_harness import oracle
from cs336_harness.diagnosis.catalog.mistake import Mistake, Variant
from cs336_harness.diagnosis.catalog.numerics import (
    float32_exp,
)
from cs336_harness.diagnosis.catalog.reading import (
    f64,
)
from cs336_harness.diagnosis.numpy_cases import NumpyCase
from cs336_harness.oracle.variants import (
    adamw_trajectory_with,
)

MISTAKES: list[Mistake] = []


def _ce_terms(c: NumpyCase) -> tuple[np.ndarray, np.ndarray]:
    z = f64(c.inputs["inputs"])
    target = np.take_along_axis(z, c.inputs["targets"][..., None].astype(np.int64), -1)[..., 0]
    return z, target


def _ce_no_shift(c: NumpyCase) -> np.ndarray | None:
    z, target = _ce_terms(c)
    e = float32_exp(z)
    if np.isfinite(e).all() and (e.sum(-1) > 0).all():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.mean(np.log(e.sum(-1)) - target))


MISTAKES.append(
    Mistake(
        "cross_entropy_without_max_shift",
        "cross-entropy takes log(sum(exp(logits))) without subtracting the maximum first, and "
        "exp overflows",
        {"cross_entropy": _ce_no_shift},
    )
)


def _ce_summed(c: NumpyCase) -> np.ndarray | None:
    targets = c.inputs["targets"]
    if targets.size == 1:
        return None
    return np.asarray(oracle.cross_entropy(c.inputs["inputs"], targets) * targets.size)


MISTAKES.append(
    Mistake(
        "cross_entropy_summed",
        "cross-entropy is summed over the positions; it is their mean",
        {"cross_entropy": _ce_summed},
    )
)


def _clipping_grads(c: NumpyCase) -> list[np.ndarray]:
    return [f64(c.inputs[f"grad.{i}"]) for i in range(c.params["count"]) if f"grad.{i}" in c.inputs]


def _clipped(c: NumpyCase) -> tuple[list[np.ndarray], float, float] | None:
    grads = _clipping_grads(c)
    total = math.sqrt(sum(float((g**2).sum()) for g in grads))
    limit = c.params["max_l2_norm"]
    return None if total <= limit else (grads, total, limit)


def _clipping_per_parameter(c: NumpyCase) -> np.ndarray | None:
    clipped = _clipped(c)
    if clipped is None:
        return None
    grads, _, limit = clipped
    out = []
    for g in grads:
        norm = float(np.sqrt((g**2).sum()))
        out.append(g * (limit / (norm + 1e-6)) if norm > limit else g)
    return np.concatenate([g.ravel() for g in out])


MISTAKES.append(
    Mistake(
        "clipping_per_parameter",
        "each gradient is clipped by its own norm; the norm is one L2 norm over all gradients "
        "together",
        {"gradient_clipping": _clipping_per_parameter},
    )
)


def _clipping_without_eps(c: NumpyCase) -> np.ndarray | None:
    clipped = _clipped(c)
    if clipped is None:
        return None
    grads, total, limit = clipped
    return np.concatenate([(g * (limit / total)).ravel() for g in grads])


MISTAKES.append(
    Mistake(
        "clipping_without_epsilon",
        "gradients are scaled by max / norm; the factor is max / (norm + 1e-6)",
        {"gradient_clipping": _clipping_without_eps},
        graded=True,
    )
)


def _adamw(**switches: Any) -> Variant:
    def variant(c: NumpyCase) -> np.ndarray | None:
        p = c.params
        if "per_group" in switches and len({repr(_hyper(g)) for g in p["groups"]}) == 1:
            return None
        initial = [c.inputs[f"initial.{i}"] for i in range(p["count"])]
        grads = [
            [c.inputs.get(f"grad.{t}.{i}") for i in range(p["count"])] for t in range(p["steps"])
        ]
        steps = adamw_trajectory_with(initial, grads, p["groups"], **switches)
        return np.stack([np.concatenate([q.ravel() for q in step]) for step in steps])

    return variant


def _hyper(group: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in group.items() if k != "params"}


MISTAKES.append(
    Mistake(
        "adamw_without_bias_correction",
        "AdamW steps by lr · m / (sqrt(v) + eps) without the bias correction "
        "sqrt(1 - β2^t) / (1 - β1^t)",
        {"adamw": _adamw(bias_correction=False)},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_coupled_weight_decay",
        "weight decay is added to the gradient (Adam with L2); AdamW decays the parameters "
        "directly: θ ← θ - lr·λ·θ",
        {"adamw": _adamw(decay="coupled")},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_decay_without_lr",
        "weight decay is θ ← θ - λ·θ; it is scaled by the learning rate: θ ← θ - lr·λ·θ",
        {"adamw": _adamw(decay="without_lr")},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_ignores_param_groups",
        "every parameter group is stepped with the constructor's hyperparameters; each group "
        "has its own lr, betas, eps and weight_decay",
        {"adamw": _adamw(per_group=False)},
    )
)


def _schedule(rate: Callable[[int, float, float, int, int], float], applies) -> Variant:
    def variant(c: NumpyCase) -> np.ndarray | None:
        p, its = c.params, c.inputs["its"].tolist()
        args = (
            p["max_learning_rate"],
            p["min_learning_rate"],
            p["warmup_iters"],
            p["cosine_cycle_iters"],
        )
        if not applies(its, *args):
            return None
        return np.asarray([rate(it, *args) for it in its])

    return variant


def _cosine(phase: float, max_lr: float, min_lr: float) -> float:
    return min_lr + 0.5 * (1 + math.cos(math.pi * phase)) * (max_lr - min_lr)


def _warmup_off_by_one(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return (it + 1) / warmup * max_lr
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


MISTAKES.append(
    Mistake(
        "schedule_warmup_off_by_one",
        "warm-up is (it + 1) / warmup_iters · max; it is it / warmup_iters · max, 0 at it = 0",
        {"learning_rate_schedule": _schedule(_warmup_off_by_one, lambda its, *a: min(its) < a[2])},
    )
)


def _cosine_over_whole_cycle(it, max_lr, min_lr, warmup, cycle):
    if warmup <= it <= cycle:
        return _cosine(it / cycle, max_lr, min_lr)
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


MISTAKES.append(
    Mistake(
        "schedule_cosine_over_whole_cycle",
        "the cosine's phase is it / cosine_cycle_iters; it is "
        "(it - warmup_iters) / (cosine_cycle_iters - warmup_iters)",
        {"learning_rate_schedule": _schedule(_cosine_over_whole_cycle, lambda its, *a: a[2] > 0)},
    )
)


def _no_floor(it, max_lr, min_lr, warmup, cycle):
    if it > cycle:
        return _cosine((it - warmup) / (cycle - warmup), max_lr, min_lr)
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


MISTAKES.append(
    Mistake(
        "schedule_without_floor",
        "past cosine_cycle_iters the rate follows the cosine back up; it stays at "
        "min_learning_rate",
        {"learning_rate_schedule": _schedule(_no_floor, lambda its, *a: max(its) > a[3])},
    )
)
