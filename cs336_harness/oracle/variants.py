"""Float64 reference math for known mistakes: what an implementation with one of them computes.

The diagnosis catalog (`cs336_harness/diagnosis/catalog/`) builds most mistaken outputs
from the oracle's own functions on changed arguments (Θ = 10000, w1 and w3 swapped, gains
of 1, the query projection scaled). The functions here are the few mistakes that change
the computation itself. They are new functions beside the oracle's, so its own results
cannot change; every one of them, with its switches in their correct position, computes
what the oracle does.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cs336_harness.oracle.attention import rope, scaled_dot_product_attention
from cs336_harness.oracle.functional import embedding, layernorm, linear, rmsnorm, swiglu
from cs336_harness.oracle.model import transformer_block

Array = NDArray[np.float64]


def multihead_self_attention_with(
    x: ArrayLike,
    q_weight: ArrayLike,
    k_weight: ArrayLike,
    v_weight: ArrayLike,
    o_weight: ArrayLike,
    num_heads: int,
    *,
    theta: float | None = None,
    positions: ArrayLike | None = None,
    causal: bool = True,
    rotated: Collection[str] = ("q", "k"),
) -> Array:
    """Multi-head self-attention (no biases) with two mistakes as switches.

    Args:
        x: ``(..., seq, d_model)``.
        q_weight, k_weight, v_weight, o_weight: ``(d_model, d_model)``; head ``h`` is rows
            ``h·d_k … (h+1)·d_k − 1`` of each projection, as in the oracle.
        num_heads: heads; ``d_k = d_model / num_heads``.
        theta: RoPE base; None = no RoPE.
        positions: integer positions broadcastable to ``(..., seq)``; default ``arange(seq)``.
        causal: False = every query attends every key.
        rotated: which of ``"q"``, ``"k"``, ``"v"`` RoPE rotates (correct: q and k).

    Returns:
        ``(..., seq, d_model)``.
    """
    x = np.asarray(x, dtype=np.float64)
    seq, d_model = x.shape[-2], x.shape[-1]

    def split(w: ArrayLike) -> Array:
        t = linear(x, w)
        # (..., seq, d_model) -> (..., heads, seq, d_k)
        return np.swapaxes(t.reshape(*t.shape[:-1], num_heads, d_model // num_heads), -2, -3)

    heads = {"q": split(q_weight), "k": split(k_weight), "v": split(v_weight)}
    if theta is not None:
        pos = np.arange(seq) if positions is None else np.asarray(positions)
        pos = np.expand_dims(np.broadcast_to(pos, x.shape[:-1]), -2)
        heads |= {name: rope(heads[name], pos, theta) for name in rotated}
    mask = np.tril(np.ones((seq, seq), dtype=bool)) if causal else None
    out = scaled_dot_product_attention(heads["q"], heads["k"], heads["v"], mask)
    return linear(np.swapaxes(out, -2, -3).reshape(*x.shape[:-1], d_model), o_weight)


def non_causal_block(
    x: ArrayLike, weights: Mapping[str, ArrayLike], *, num_heads: int, theta: float
) -> Array:
    """The default pre-norm block (RMSNorm, RoPE at positions ``0 … seq−1``, SwiGLU) with
    attention that sees every position, the future included. ``(..., seq, d_model)`` in and
    out; ``weights`` as for ``transformer_block``."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    attn = [w[f"attn.{p}.weight"] for p in ("q_proj", "k_proj", "v_proj", "output_proj")]
    h = np.asarray(x, dtype=np.float64)
    h = h + multihead_self_attention_with(
        rmsnorm(h, w["ln1.weight"]), *attn, num_heads, theta=theta, causal=False
    )
    ffn = (w["ffn.w1.weight"], w["ffn.w2.weight"], w["ffn.w3.weight"])
    return h + swiglu(rmsnorm(h, w["ln2.weight"]), *ffn)


def transformer_lm_with(
    ids: ArrayLike,
    weights: Mapping[str, ArrayLike],
    config: Mapping[str, Any],
    *,
    causal: bool = True,
    final_norm: bool = True,
    positions_after_first_block: bool = False,
) -> Array:
    """``transformer_lm`` (same arguments, the oracle's config keys) with mistakes as switches.

    Args:
        causal: False = non-causal attention in every block (the default architecture only).
        final_norm: False = ``ln_final`` skipped before the head.
        positions_after_first_block: learned position embeddings added to the first block's
            output instead of to the token embeddings.

    Returns:
        logits ``(batch, seq, vocab_size)``.
    """
    cfg = dict(config)
    ids = np.asarray(ids)
    seq = ids.shape[-1]
    x = embedding(weights["token_embeddings.weight"], ids)
    learned = cfg.get("positions") == "learned"
    table = (
        np.asarray(weights["position_embeddings.weight"], dtype=np.float64)[:seq] if learned else 0
    )
    if not positions_after_first_block:
        x = x + table
    for i in range(cfg["num_layers"]):
        prefix = f"layers.{i}."
        layer = {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
        if causal:
            x = transformer_block(x, layer, num_heads=cfg["num_heads"], config=cfg)
        else:
            x = non_causal_block(x, layer, num_heads=cfg["num_heads"], theta=cfg["rope_theta"])
        if positions_after_first_block and i == 0:
            x = x + table
    norm = cfg.get("norm", "rmsnorm")
    if final_norm and norm != "none" and cfg.get("norm_position", "pre") == "pre":
        eps = cfg.get("norm_eps", 1e-5)
        gain = weights["ln_final.weight"]
        if norm == "rmsnorm":
            x = rmsnorm(x, gain, eps)
        else:
            x = layernorm(x, gain, weights["ln_final.bias"], eps)
    tied = cfg.get("tie_embeddings", False)
    return linear(x, weights["token_embeddings.weight" if tied else "lm_head.weight"])


def adamw_trajectory_with(
    initial: Sequence[ArrayLike],
    grads: Sequence[Sequence[ArrayLike | None]],
    groups: Sequence[Mapping[str, Any]],
    *,
    bias_correction: str = "both",
    decay: str = "decoupled",
    per_group: bool = True,
    betas_swapped: bool = False,
    step_offset: int = 0,
    first_moment: str = "ema",
    second_moment: str = "square",
    shared_step: bool = False,
    decay_without_grad: bool = False,
) -> list[list[Array]]:
    """``adamw_trajectory``'s handout reading (its first three arguments) with mistakes as
    switches.

    Args:
        bias_correction: ``"both"`` (correct), ``"none"`` (the step is ``lr · m / (√v + ε)``),
            ``"first_only"`` (``lr · m̂ / (√v + ε)``), ``"second_only"``
            (``lr · m / (√v̂ + ε)``) or ``"inverted"`` (the step size
            ``lr · (1 − β₁ᵗ) / √(1 − β₂ᵗ)``).
        decay: ``"decoupled"`` (θ ← θ − lr·λ·θ after the update), ``"coupled"`` (λθ added to
            the gradient, Adam with L2, no decoupled decay) or ``"without_lr"`` (θ ← θ − λθ).
        per_group: False = every group stepped with the first group's hyperparameters (the
            constructor's).
        betas_swapped: True = β₁ and β₂ trade places.
        step_offset: added to the step count t in the bias correction (1: the count starts
            at 1 and is incremented before its first use).
        first_moment: ``"ema"`` (m ← β₁m + (1 − β₁)g) or ``"sum"`` (m ← β₁m + g).
        second_moment: ``"square"`` (v ← β₂v + (1 − β₂)g²) or ``"plain"`` (v ← β₂v + (1 − β₂)g,
            whose square root is NaN where v turns negative).
        shared_step: True = one step count for the optimizer, advanced at every step, not one
            per parameter advanced only when it has a gradient.
        decay_without_grad: True = a parameter without a gradient is still decayed.

    Returns:
        every parameter after every step, as ``adamw_trajectory``.
    """
    if decay not in ("decoupled", "coupled", "without_lr"):
        raise ValueError(f"adamw_trajectory_with: unknown decay {decay!r}")
    if bias_correction not in ("both", "none", "first_only", "second_only", "inverted"):
        raise ValueError(f"adamw_trajectory_with: unknown bias_correction {bias_correction!r}")
    theta = [np.asarray(p, dtype=np.float64).copy() for p in initial]
    m = [np.zeros_like(p) for p in theta]
    v = [np.zeros_like(p) for p in theta]
    steps = [0] * len(theta)
    hyper = {i: group if per_group else groups[0] for group in groups for i in group["params"]}
    out = []
    for step, step_grads in enumerate(grads):
        for i, g in enumerate(step_grads):
            h = hyper[i]
            lr, (b1, b2), eps, lam = h["lr"], h["betas"], h["eps"], h["weight_decay"]
            if g is None:
                if decay_without_grad:
                    theta[i] = theta[i] * (1 - lr * lam)
                continue
            if betas_swapped:
                b1, b2 = b2, b1
            g = np.asarray(g, dtype=np.float64)
            if decay == "coupled":
                g = g + lam * theta[i]
            steps[i] += 1
            t = (step + 1 if shared_step else steps[i]) + step_offset
            m[i] = b1 * m[i] + (g if first_moment == "sum" else (1 - b1) * g)
            v[i] = b2 * v[i] + (1 - b2) * (g if second_moment == "plain" else g * g)
            c1, c2 = 1 - b1**t, math.sqrt(1 - b2**t)
            with np.errstate(invalid="ignore"):
                root = np.sqrt(v[i])
            if bias_correction == "both":
                update = lr * c2 / c1 * m[i] / (root + eps)
            elif bias_correction == "inverted":
                update = lr * c1 / c2 * m[i] / (root + eps)
            elif bias_correction == "first_only":
                update = lr * m[i] / c1 / (root + eps)
            elif bias_correction == "second_only":
                update = lr * m[i] / (root / c2 + eps)
            else:
                update = lr * m[i] / (root + eps)
            theta[i] = theta[i] - update
            if decay == "decoupled":
                theta[i] = theta[i] * (1 - lr * lam)
            elif decay == "without_lr":
                theta[i] = theta[i] * (1 - lam)
        out.append([p.copy() for p in theta])
    return out
