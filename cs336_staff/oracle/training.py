"""Float64 reference math for the training half: loss, clipping, AdamW, schedule, decoding.

Written from the handout's formulas in NumPy, independently of `cs336_basics`. Where the
assignment admits more than one reading (AdamW's order of decay and update, and where ε
goes), each is computed, and a correct implementation may match any of them.
``cross_entropy_backward`` follows ``cross_entropy`` (conventions: `gradients`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cs336_staff.oracle.functional import f64, softmax
from cs336_staff.oracle.gradients import Grads
from cs336_staff.oracle.model import transformer_lm

__all__ = [
    "adamw_trajectory",
    "clip_gradients",
    "cosine_schedule",
    "cross_entropy",
    "cross_entropy_backward",
    "greedy_generate",
    "nucleus_distribution",
]

Array = NDArray[np.float64]


def cross_entropy(logits: ArrayLike, targets: ArrayLike) -> float:
    """Mean over every leading position of ``log Σ exp(logits) − logits[target]``."""
    z = np.asarray(logits, dtype=np.float64)
    t = np.asarray(targets)
    if z.shape[:-1] != t.shape:
        raise ValueError(f"cross_entropy: logits {z.shape} and targets {t.shape} disagree")
    top = z.max(axis=-1, keepdims=True)
    log_normaliser = np.log(np.exp(z - top).sum(axis=-1)) + top[..., 0]
    target_logit = np.take_along_axis(z, t[..., None].astype(np.int64), axis=-1)[..., 0]
    return float((log_normaliser - target_logit).mean())


def cross_entropy_backward(logits: ArrayLike, targets: ArrayLike, d_out: float = 1.0) -> Grads:
    """Of the mean cross-entropy, a scalar (so ``d_out`` is a number): ``d_out · (softmax(
    logits) − one_hot(targets)) / N`` over the ``N`` leading positions. Returns ``logits``."""
    logits, targets = f64(logits), np.asarray(targets)
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"cross_entropy_backward: logits {logits.shape}, targets {targets.shape}")
    targets = targets.astype(np.int64)
    grad = softmax(logits, -1)
    np.put_along_axis(
        grad, targets[..., None], np.take_along_axis(grad, targets[..., None], -1) - 1.0, -1
    )
    count = max(targets.size, 1)
    return {"logits": float(d_out) * grad / count}


def clip_gradients(
    grads: Sequence[ArrayLike | None], max_l2_norm: float, eps: float = 1e-6
) -> list[Array | None]:
    """Scale every gradient by ``max / (‖g‖ + eps)`` when the global norm ``‖g‖`` of all of
    them together exceeds ``max``; None (no gradient) stays None."""
    arrays = [None if g is None else np.asarray(g, dtype=np.float64) for g in grads]
    total = math.sqrt(sum(float((g**2).sum()) for g in arrays if g is not None))
    scale = max_l2_norm / (total + eps) if total > max_l2_norm else 1.0
    return [None if g is None else g * scale for g in arrays]


def adamw_trajectory(
    initial: Sequence[ArrayLike],
    grads: Sequence[Sequence[ArrayLike | None]],
    groups: Sequence[Mapping[str, Any]],
    decay_order: str = "after_update",
    eps_added_to: str = "sqrt_v",
) -> list[list[Array]]:
    """Every parameter after every step of AdamW driven by fixed gradients.

    ``grads[t][i]`` is parameter i's gradient at step t (None: no gradient, the parameter is
    left alone and its own step count does not advance, as in ``torch.optim``). ``groups``
    hold ``params`` (indices) and ``lr``, ``betas``, ``eps``, ``weight_decay``.

    The handout and ``torch.optim.AdamW`` differ in two independent places, and a careful
    reader may take either side of each, so every combination is a reading:

    - ``decay_order``: ``"after_update"`` (the handout: θ ← θ − lr·λ·θ once the update is
      applied) or ``"first"`` (torch: the decay before the update).
    - ``eps_added_to``: ``"sqrt_v"`` (the handout: the bias correction folded into the step
      size, ``lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m / (√v + ε)``) or ``"sqrt_v_hat"`` (torch:
      ``lr · m̂ / (√v̂ + ε)`` with the corrected moments), which is ε scaled by √(1 − β₂ᵗ).
    """
    if decay_order not in ("after_update", "first"):
        raise ValueError(f"adamw_trajectory: unknown decay_order {decay_order!r}")
    if eps_added_to not in ("sqrt_v", "sqrt_v_hat"):
        raise ValueError(f"adamw_trajectory: unknown eps_added_to {eps_added_to!r}")
    theta = [np.asarray(p, dtype=np.float64).copy() for p in initial]
    m = [np.zeros_like(p) for p in theta]
    v = [np.zeros_like(p) for p in theta]
    steps = [0] * len(theta)
    hyper = {}
    for group in groups:
        for i in group["params"]:
            hyper[i] = group
    out = []
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            if g is None:
                continue
            g = np.asarray(g, dtype=np.float64)
            h = hyper[i]
            lr, (b1, b2), eps, decay = h["lr"], h["betas"], h["eps"], h["weight_decay"]
            steps[i] += 1
            t = steps[i]
            if decay_order == "first":
                theta[i] = theta[i] * (1 - lr * decay)
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            if eps_added_to == "sqrt_v":
                step_size = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
                theta[i] = theta[i] - step_size * m[i] / (np.sqrt(v[i]) + eps)
            else:
                m_hat, v_hat = m[i] / (1 - b1**t), v[i] / (1 - b2**t)
                theta[i] = theta[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
            if decay_order == "after_update":
                theta[i] = theta[i] * (1 - lr * decay)
        out.append([p.copy() for p in theta])
    return out


def cosine_schedule(
    it: int, max_lr: float, min_lr: float, warmup_iters: int, cosine_cycle_iters: int
) -> float:
    """Linear warm-up to ``max_lr``, a half cosine down to ``min_lr``, then ``min_lr``."""
    if it < warmup_iters:
        return it / warmup_iters * max_lr
    if it <= cosine_cycle_iters:
        phase = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
        return min_lr + 0.5 * (1 + math.cos(math.pi * phase)) * (max_lr - min_lr)
    return min_lr


def nucleus_distribution(logits: ArrayLike, temperature: float, top_p: float) -> Array:
    """``softmax(logits / τ)`` per row, cut to the most likely tokens whose mass first reaches
    ``top_p`` (the token that crosses it included) and renormalised."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    out = np.zeros_like(p)
    for index in np.ndindex(p.shape[:-1]):
        row = p[index]
        order = np.argsort(-row, kind="stable")
        before = np.cumsum(row[order]) - row[order]
        kept = order[before < top_p]
        out[(*index, kept)] = row[kept] / row[kept].sum()
    return out


def greedy_generate(
    prompt: ArrayLike,
    weights: Mapping[str, ArrayLike],
    config: Mapping[str, Any],
    max_new_tokens: int,
    end_of_text_id: int | None = None,
) -> tuple[list[int], float]:
    """Arg-max decoding from the LM; the new tokens (end-of-text included) and the smallest
    gap between the best and second-best logit met on the way (how safe arg-max is)."""
    tokens = [int(t) for t in np.asarray(prompt)]
    new, smallest_gap = [], math.inf
    for _ in range(max_new_tokens):
        window = np.asarray(tokens[-config["context_length"] :])[None]
        logits = transformer_lm(window, weights, config)[0, -1]
        best, second = np.sort(logits)[-1], np.sort(logits)[-2]
        smallest_gap = min(smallest_gap, float(best - second))
        token = int(np.argmax(logits))
        new.append(token)
        tokens.append(token)
        if token == end_of_text_id:
            break
    return new, smallest_gap
