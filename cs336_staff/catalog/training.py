"""Known mistakes in the training half: cross-entropy, gradient clipping, AdamW and the
learning-rate schedule."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cs336_harness.judging.diagnosis.numpy_cases import NumpyCase
from cs336_staff import oracle
from cs336_staff.catalog.mistake import Mistake, Variant
from cs336_staff.catalog.numerics import (
    FLOAT32_EXP_UNDERFLOW,
    float32_exp,
)
from cs336_staff.catalog.reading import (
    f64,
)
from cs336_staff.oracle.variants import (
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


def _ce_per_position(c: NumpyCase) -> np.ndarray:
    """log Σ exp(logits) − logits[target] at each position, in float64."""
    z, target = _ce_terms(c)
    top = z.max(-1)
    return np.log(np.exp(z - top[..., None]).sum(-1)) + top - target


def _ce_shows(loss: Callable[[NumpyCase], float]) -> Variant:
    """A cross-entropy variant from the mistaken loss; None where that loss is within 1e-3
    (relative) of the truth, too close to the correct loss to name the mistake."""

    def variant(c: NumpyCase) -> np.ndarray | None:
        value, truth = loss(c), float(_ce_per_position(c).mean())
        return None if abs(value - truth) <= 1e-3 * (1 + abs(truth)) else np.asarray(value)

    return variant


MISTAKES.append(
    Mistake(
        "cross_entropy_negated",
        "cross-entropy returns the mean log-probability of the targets; the loss is its "
        "negative, the mean of -log softmax(logits)[target]",
        {"cross_entropy": _ce_shows(lambda c: -float(_ce_per_position(c).mean()))},
    )
)


def _ce_max_not_added_back(c: NumpyCase) -> float:
    z, target = _ce_terms(c)
    top = z.max(-1)
    return float((np.log(np.exp(z - top[..., None]).sum(-1)) - target).mean())


MISTAKES.append(
    Mistake(
        "cross_entropy_max_not_added_back",
        "the log-sum-exp subtracts the largest logit m and never adds it back, "
        "log Σ exp(o - m) - o[target]; it is m + log Σ exp(o - m) - o[target]",
        {"cross_entropy": _ce_shows(_ce_max_not_added_back)},
    )
)


def _ce_every_class(c: NumpyCase) -> float:
    z = f64(c.inputs["inputs"])
    top = z.max(-1, keepdims=True)
    log_probs = z - top - np.log(np.exp(z - top).sum(-1, keepdims=True))
    return float(-log_probs.mean())


MISTAKES.append(
    Mistake(
        "cross_entropy_over_every_class",
        "the loss averages -log softmax over every vocabulary entry; at each position only "
        "the target's entry counts: -log softmax(logits)[target]",
        {"cross_entropy": _ce_shows(_ce_every_class)},
    )
)


def _ce_over_first_dim(c: NumpyCase) -> np.ndarray | None:
    losses = _ce_per_position(c)
    if losses.ndim < 2:
        return None
    return _ce_shows(lambda _: float(losses.sum() / losses.shape[0]))(c)


MISTAKES.append(
    Mistake(
        "cross_entropy_over_first_dim",
        "the summed loss is divided by the size of the first dimension; the mean is over "
        "every position of every leading dimension (batch · seq)",
        {"cross_entropy": _ce_over_first_dim},
    )
)


def _ce_over_dim_1(c: NumpyCase) -> np.ndarray | None:
    z = f64(c.inputs["inputs"])
    if z.ndim < 3:
        return None
    top = z.max(1, keepdims=True)
    log_probs = z - top - np.log(np.exp(z - top).sum(1, keepdims=True))
    t = c.inputs["targets"][..., None].astype(np.int64)
    picked = np.take_along_axis(log_probs, t, -1)[..., 0]
    return _ce_shows(lambda _: -float(picked.mean()))(c)


MISTAKES.append(
    Mistake(
        "cross_entropy_over_dim_1",
        "the log-softmax is taken over dim=1, the vocabulary only for 2-D logits; it is "
        "taken over the last dimension (dim=-1)",
        {"cross_entropy": _ce_over_dim_1},
    )
)


MISTAKES.append(
    Mistake(
        "cross_entropy_in_bits",
        "cross-entropy takes log2; it is the natural log (torch.log, logsumexp)",
        {"cross_entropy": _ce_shows(lambda c: float(_ce_per_position(c).mean()) / math.log(2))},
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


def _clipping_shows(c: NumpyCase, clipped: list[np.ndarray]) -> np.ndarray | None:
    """The mistaken clipping's output, flattened; None where it is what correct clipping
    gives (within 1e-4 relative), or where it left every gradient as it was: clipping that
    does nothing has many causes, and names none of them."""
    grads, limit = _clipping_grads(c), c.params["max_l2_norm"]
    out = np.concatenate([g.ravel() for g in clipped])
    truth = np.concatenate([g.ravel() for g in oracle.clip_gradients(grads, limit)])
    unchanged = np.array_equal(out, np.concatenate([g.ravel() for g in grads]))
    return None if unchanged or np.allclose(out, truth, rtol=1e-4, atol=0.0) else out


def _clipping(norm: Callable[[list[np.ndarray]], float], *, always: bool = False) -> Variant:
    """A clipping variant that measures the gradients with `norm` (`always`: scales them to
    the limit even when under it)."""

    def variant(c: NumpyCase) -> np.ndarray | None:
        grads, limit = _clipping_grads(c), c.params["max_l2_norm"]
        total = norm(grads)
        scale = limit / (total + 1e-6) if always or total > limit else 1.0
        return _clipping_shows(c, [g * scale for g in grads])

    return variant


def _l2(grads: list[np.ndarray]) -> float:
    return math.sqrt(sum(float((g**2).sum()) for g in grads))


MISTAKES.append(
    Mistake(
        "clipping_scales_up_below_the_limit",
        "gradients under the limit are scaled up to it; they are left as they are unless "
        "their norm exceeds max_l2_norm",
        {"gradient_clipping": _clipping(_l2, always=True)},
    )
)


MISTAKES.append(
    Mistake(
        "clipping_squared_norm",
        "the norm is the sum of squares, without the square root; it is "
        "sqrt(sum of every gradient's squares)",
        {"gradient_clipping": _clipping(lambda gs: sum(float((g**2).sum()) for g in gs))},
    )
)


MISTAKES.append(
    Mistake(
        "clipping_epsilon_inside_sqrt",
        "the norm is sqrt(sum of squares + 1e-6), the epsilon under the square root (about "
        "1e-3 where gradients are tiny); it is sqrt(sum of every gradient's squares), and the "
        "1e-6 goes in max / (norm + 1e-6)",
        {"gradient_clipping": _clipping(lambda gs: math.sqrt(_l2(gs) ** 2 + 1e-6))},
    )
)


MISTAKES.append(
    Mistake(
        "clipping_l1_norm",
        "the norm is the sum of absolute values (L1); it is the L2 norm, "
        "sqrt(sum of every gradient's squares)",
        {"gradient_clipping": _clipping(lambda gs: sum(float(np.abs(g).sum()) for g in gs))},
    )
)


MISTAKES.append(
    Mistake(
        "clipping_max_abs_norm",
        "the norm is the largest absolute entry (the max norm); it is the L2 norm, "
        "sqrt(sum of every gradient's squares)",
        {"gradient_clipping": _clipping(lambda gs: max(float(np.abs(g).max()) for g in gs))},
    )
)


def _clipping_elementwise(c: NumpyCase) -> np.ndarray | None:
    limit = c.params["max_l2_norm"]
    return _clipping_shows(c, [np.clip(g, -limit, limit) for g in _clipping_grads(c)])


MISTAKES.append(
    Mistake(
        "clipping_each_element",
        "each gradient entry is clamped to [-max, max] (clip by value); clipping rescales "
        "every gradient by max / (norm + 1e-6) when the global L2 norm exceeds max",
        {"gradient_clipping": _clipping_elementwise},
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
        out = _flat(adamw_trajectory_with(initial, grads, p["groups"], **switches))
        if switches.get("second_moment") != "plain":
            return out
        # 1/√v of a v that averages g, not g², and so passes near zero: there a float32
        # implementation of this mistake and the float64 one part by far more than rounding
        # (measured: 1.3e-4 on one element of seed 12's draw), so those elements, from the
        # first step where a float32 rendering departs, are left out of the fingerprint.
        rough = _flat(
            adamw_trajectory_with(initial, grads, p["groups"], **switches, dtype=np.float32)
        )
        with np.errstate(invalid="ignore"):
            close = np.isclose(rough, out, rtol=1e-6, atol=1e-6) | (np.isnan(rough) & np.isnan(out))
        return np.ma.masked_array(out, np.logical_or.accumulate(~close, axis=0))

    return variant


def _flat(steps: list[list[np.ndarray]]) -> np.ndarray:
    """A trajectory as the adamw test compares it: one row per step, the parameters flat."""
    return np.stack([np.concatenate([q.ravel() for q in step]) for step in steps])


def _hyper(group: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in group.items() if k != "params"}


MISTAKES.append(
    Mistake(
        "adamw_without_bias_correction",
        "AdamW steps by lr · m / (sqrt(v) + eps) without the bias correction "
        "sqrt(1 - β2^t) / (1 - β1^t)",
        {"adamw": _adamw(bias_correction="none")},
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


MISTAKES.append(
    Mistake(
        "adamw_update_added",
        "the update is added to the parameters (gradient ascent); it is subtracted: "
        "θ ← θ - lr_t · m / (sqrt(v) + eps)",
        {"adamw": _adamw(ascent=True)},
    )
)


def _adamw_when_a_gradient_is_missing(**switches: Any) -> Variant:
    """An AdamW variant for a mistake that only shows on a step some parameter skips."""
    full = _adamw(**switches)

    def variant(c: NumpyCase) -> np.ndarray | None:
        steps, count = c.params["steps"], c.params["count"]
        every = all(f"grad.{t}.{i}" in c.inputs for t in range(steps) for i in range(count))
        return None if every else full(c)

    return variant


MISTAKES.append(
    Mistake(
        "adamw_betas_swapped",
        "β1 and β2 trade places: the first moment decays with betas[1] and the second with "
        "betas[0]; m uses β1 = betas[0], v uses β2 = betas[1]",
        {"adamw": _adamw(betas_swapped=True)},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_step_count_ahead",
        "the bias correction's t is 2 at the first step (the count starts at 1 and is "
        "incremented before use); t is 1 at the first step",
        {"adamw": _adamw(step_offset=1)},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_first_moment_without_one_minus_beta1",
        "the first moment is m ← β1·m + g; it is m ← β1·m + (1 - β1)·g",
        {"adamw": _adamw(first_moment="sum")},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_second_moment_of_g",
        "the second moment averages g, not g², and its square root turns NaN; it is "
        "v ← β2·v + (1 - β2)·g²",
        {"adamw": _adamw(second_moment="plain")},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_bias_correction_inverted",
        "the step size is lr·(1 - β1^t) / sqrt(1 - β2^t), upside down; it is "
        "lr·sqrt(1 - β2^t) / (1 - β1^t)",
        {"adamw": _adamw(bias_correction="inverted")},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_second_moment_uncorrected",
        "only the first moment is bias-corrected, lr·m̂ / (sqrt(v) + eps); v needs its "
        "correction too: lr·m̂ / (sqrt(v̂) + eps), v̂ = v / (1 - β2^t)",
        {"adamw": _adamw(bias_correction="first_only")},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_shared_step_count",
        "one step count serves every parameter, advanced at each step(); each parameter "
        "keeps its own t in self.state[p], advanced only when it has a gradient",
        {"adamw": _adamw_when_a_gradient_is_missing(shared_step=True)},
    )
)


MISTAKES.append(
    Mistake(
        "adamw_decays_parameters_without_gradient",
        "a parameter whose grad is None is still decayed; it is skipped entirely, weight "
        "decay included (as torch.optim does)",
        {"adamw": _adamw_when_a_gradient_is_missing(decay_without_grad=True)},
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


def _shows(rate) -> Variant:
    """A schedule variant, None where its rates are within 1e-4 (relative) of the truth."""

    def variant(c: NumpyCase) -> np.ndarray | None:
        out = _schedule(rate, lambda *_: True)(c)
        return None if np.allclose(out, c.expected, rtol=1e-4, atol=0.0) else out

    return variant


def _linear_decay(it, max_lr, min_lr, warmup, cycle):
    if warmup <= it <= cycle:
        return max_lr - (it - warmup) / (cycle - warmup) * (max_lr - min_lr)
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


MISTAKES.append(
    Mistake(
        "schedule_linear_decay",
        "after warm-up the rate falls in a straight line; it follows a half cosine: "
        "min + 0.5·(1 + cos(π·phase))·(max - min)",
        {"learning_rate_schedule": _shows(_linear_decay)},
    )
)


def _without_half(it, max_lr, min_lr, warmup, cycle):
    if warmup <= it <= cycle:
        phase = (it - warmup) / (cycle - warmup)
        return min_lr + (1 + math.cos(math.pi * phase)) * (max_lr - min_lr)
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


MISTAKES.append(
    Mistake(
        "schedule_cosine_without_half",
        "the cosine term lacks its factor 0.5, min + (1 + cos(π·phase))·(max - min); it is "
        "min + 0.5·(1 + cos(π·phase))·(max - min)",
        {"learning_rate_schedule": _shows(_without_half)},
    )
)


def _warmup_to_min(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return it / warmup * min_lr
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


MISTAKES.append(
    Mistake(
        "schedule_warmup_to_min",
        "warm-up climbs to min_learning_rate, it / warmup_iters · min; it climbs to the "
        "maximum: it / warmup_iters · max_learning_rate",
        {"learning_rate_schedule": _shows(_warmup_to_min)},
    )
)


def _warmup_from_min(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return min_lr + it / warmup * (max_lr - min_lr)
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


MISTAKES.append(
    Mistake(
        "schedule_warmup_from_min",
        "warm-up starts from min_learning_rate; it starts from 0: it / warmup_iters · max",
        {"learning_rate_schedule": _shows(_warmup_from_min)},
    )
)


def _cycle_after_warmup(it, max_lr, min_lr, warmup, cycle):
    if warmup <= it <= warmup + cycle:
        return _cosine((it - warmup) / cycle, max_lr, min_lr)
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


MISTAKES.append(
    Mistake(
        "schedule_cycle_counted_after_warmup",
        "cosine_cycle_iters is taken as the length of the cosine after warm-up (phase "
        "(it - warmup_iters) / cosine_cycle_iters); it is the iteration where the cosine "
        "ends: phase (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)",
        {"learning_rate_schedule": _shows(_cycle_after_warmup)},
    )
)


def _ce_log_of_softmax(c: NumpyCase) -> np.ndarray | None:
    """-log(softmax(logits)[target]) in float32: inf where the target's exp(z - max)
    underflows to 0, within a margin of 1 for rounding; else the true loss, up to rounding."""
    z, target = _ce_terms(c)
    if not (target - z.max(-1) < FLOAT32_EXP_UNDERFLOW - 1).any():
        return None
    return np.asarray(np.inf)


MISTAKES.append(
    Mistake(
        "cross_entropy_log_of_softmax",
        "cross-entropy takes -log(softmax(logits)[target]): a target far below the largest "
        "logit has probability 0 in float32 and the loss is inf; compute log-softmax as "
        "logits - max - log(sum(exp(logits - max)))",
        {"cross_entropy": _ce_log_of_softmax},
    )
)


# The hyperparameters a param group carries, as the test hands them to the constructor too.
HYPERPARAMETERS = ("lr", "betas", "eps", "weight_decay")


def _adamw_group_keys_ignored(keys: tuple[str, ...]) -> Variant:
    """Each group stepped with the constructor's `keys` (the first group's, which the test
    passes to the constructor) and its own other hyperparameters: an AdamW that keeps those
    under names of its own in `defaults`, which a group's own entries never override."""

    def variant(c: NumpyCase) -> np.ndarray | None:
        p = c.params
        first = p["groups"][0]
        groups = [g | {k: first[k] for k in keys} for g in p["groups"]]
        if groups == p["groups"]:
            return None
        initial = [c.inputs[f"initial.{i}"] for i in range(p["count"])]
        grads = [
            [c.inputs.get(f"grad.{t}.{i}") for i in range(p["count"])] for t in range(p["steps"])
        ]
        return _flat(adamw_trajectory_with(initial, grads, groups))

    return variant


# The sets of hyperparameters students' AdamWs were seen to keep under keys of their own
# (docs/mistakes.md); all four is `adamw_ignores_param_groups`.
GROUP_KEYS_IGNORED = {
    "adamw_group_betas_ignored": ("betas",),
    "adamw_group_betas_and_decay_ignored": ("betas", "weight_decay"),
    "adamw_group_betas_eps_and_decay_ignored": ("betas", "eps", "weight_decay"),
    "adamw_group_lr_betas_and_decay_ignored": ("lr", "betas", "weight_decay"),
}


def _group_keys_mistake(mistake: str, keys: tuple[str, ...]) -> Mistake:
    names = ", ".join(f"'{k}'" for k in keys)
    return Mistake(
        mistake,
        f"AdamW steps every param group with the constructor's {names}, kept under keys of its "
        "own in defaults (e.g. 'beta1') or in attributes (self.betas), which a group's own "
        "entries never set; read each hyperparameter from the group in step(): group['lr'], "
        "group['betas'], group['eps'], group['weight_decay']",
        {"adamw": _adamw_group_keys_ignored(keys)},
    )


MISTAKES.extend(_group_keys_mistake(m, keys) for m, keys in GROUP_KEYS_IGNORED.items())


def _ce_target_probability(c: NumpyCase) -> np.ndarray:
    z, target = _ce_terms(c)
    top = z.max(-1)
    return np.exp(target - top - np.log(np.exp(z - top[..., None]).sum(-1)))


for _eps, _written in ((1e-8, "1e-8"), (1e-9, "1e-9")):
    MISTAKES.append(
        Mistake(
            f"cross_entropy_log_of_softmax_plus_{_written.replace('-', '_')}",
            f"cross-entropy takes -log(softmax(logits)[target] + {_written}): a target far "
            f"below the largest logit costs -log({_written}), not its loss; compute log-softmax "
            "as logits - max - log(sum(exp(logits - max)))",
            {
                "cross_entropy": _ce_shows(
                    lambda c, eps=_eps: float(-np.log(_ce_target_probability(c) + eps).mean())
                )
            },
        )
    )


MISTAKES.append(
    Mistake(
        "cross_entropy_one_hot_mean",
        "the loss is the mean of one_hot(targets) · -log softmax over every element, so it is "
        "divided by the vocabulary size as well; it is the mean over the positions of "
        "-log softmax(logits)[target]",
        {
            "cross_entropy": _ce_shows(
                lambda c: float(_ce_per_position(c).mean()) / c.inputs["inputs"].shape[-1]
            )
        },
    )
)


def _ce_logsumexp_over_batch(c: NumpyCase) -> float:
    z, target = _ce_terms(c)
    top = z.max()
    return float((top + np.log(np.exp(z - top).sum()) - target).mean())


MISTAKES.append(
    Mistake(
        "cross_entropy_logsumexp_over_whole_batch",
        "the log-sum-exp runs over every logit of the batch (logsumexp or sum without dim); "
        "each position normalises over its own vocabulary: logsumexp(logits, dim=-1)",
        {"cross_entropy": _ce_shows(_ce_logsumexp_over_batch)},
    )
)
