"""Float64 reference math for known mistakes: what an implementation with one of them computes.

The diagnosis catalog (`cs336_staff/catalog/`) builds most mistaken outputs
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

from cs336_staff.oracle.attention import rope, scaled_dot_product_attention
from cs336_staff.oracle.functional import (
    embedding,
    layernorm,
    linear,
    rmsnorm,
    softmax,
    swiglu,
)
from cs336_staff.oracle.model import (
    apply_attention,
    apply_ffn,
    apply_norm,
    resolve_config,
    transformer_block,
)

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
    ascent: bool = False,
    dtype: type[np.floating] = np.float64,
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
        ascent: True = the update is added to θ, not subtracted.
        dtype: the arithmetic's precision; float32 renders the mistake as a float32
            implementation would, to find where its own output is ill-conditioned.

    Returns:
        every parameter after every step, as ``adamw_trajectory``.
    """
    if decay not in ("decoupled", "coupled", "without_lr"):
        raise ValueError(f"adamw_trajectory_with: unknown decay {decay!r}")
    if bias_correction not in ("both", "none", "first_only", "second_only", "inverted"):
        raise ValueError(f"adamw_trajectory_with: unknown bias_correction {bias_correction!r}")
    theta = [np.asarray(p, dtype=dtype).copy() for p in initial]
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
            g = np.asarray(g, dtype=dtype)
            if decay == "coupled":
                g = g + lam * theta[i]
            steps[i] += 1
            t = (step + 1 if shared_step else steps[i]) + step_offset
            m[i] = b1 * m[i] + (g if first_moment == "sum" else (1 - b1) * g)
            # (1 − β₂)·g·g in the oracle's order, so that with no mistake the result is its own.
            v[i] = b2 * v[i] + ((1 - b2) * g if second_moment == "plain" else (1 - b2) * g * g)
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
            theta[i] = theta[i] + update if ascent else theta[i] - update
            if decay == "decoupled":
                theta[i] = theta[i] * (1 - lr * lam)
            elif decay == "without_lr":
                theta[i] = theta[i] * (1 - lam)
        out.append([p.copy() for p in theta])
    return out


def block_with(
    x: ArrayLike,
    weights: Mapping[str, ArrayLike],
    *,
    num_heads: int,
    config: Mapping[str, Any],
    attn_residual: bool = True,
    ffn_residual: bool = True,
    ffn_reads: str = "h",
    use_rope: bool = True,
    post_norm_on_sublayers: bool = False,
) -> Array:
    """The pre-norm ``transformer_block`` (positions ``0 … seq−1``, ``config`` complete in
    the oracle's keys) with mistakes in how it puts its sublayers together as switches; a
    post-norm config only with ``post_norm_on_sublayers``.

    Args:
        attn_residual: False = ``h = attn(ln1(x))``, the residual around attention left out.
        ffn_residual: False = ``out = ffn(ln2(h))``, the residual around the FFN left out.
        ffn_reads: what ``ln2`` normalises: ``"h"`` (correct), ``"x"`` (the block's input) or
            ``"attn"`` (the attention's output, without the residual).
        use_rope: False = attention without RoPE though the config asks for it.
        post_norm_on_sublayers: a post-norm config read as ``h = x + ln1(attn(x))``,
            ``out = h + ln2(ffn(h))``: each sublayer's output normalised, the residual
            stream never.

    Returns:
        ``(..., seq, d_model)``.
    """
    cfg = dict(config)
    h_in = np.asarray(x, dtype=np.float64)
    positions = np.arange(h_in.shape[-2])
    attn_cfg = cfg if use_rope else cfg | {"positions": "none"}

    def attn(h: Array) -> Array:
        return apply_attention(h, weights, num_heads, attn_cfg, positions)

    if post_norm_on_sublayers:
        h = h_in + apply_norm(attn(h_in), weights, "ln1", cfg)
        return h + apply_norm(apply_ffn(h, weights, cfg), weights, "ln2", cfg)
    a = attn(apply_norm(h_in, weights, "ln1", cfg))
    h = h_in + a if attn_residual else a
    f = apply_ffn(
        apply_norm({"h": h, "x": h_in, "attn": a}[ffn_reads], weights, "ln2", cfg), weights, cfg
    )
    return h + f if ffn_residual else f


def transformer_lm_assembled_with(
    ids: ArrayLike,
    weights: Mapping[str, ArrayLike],
    config: Mapping[str, Any],
    *,
    block: Mapping[str, Any] | None = None,
    embedding_scale: float = 1.0,
    layer_weights: str = "own",
    chained: bool = True,
    final_norms: int = 1,
    output: str = "logits",
    rope_with_learned_positions: bool = False,
) -> Array:
    """``transformer_lm`` (same arguments, the oracle's config keys) with mistakes in how the
    model puts its parts together as switches.

    Args:
        block: ``block_with``'s switches, for every block; None = the oracle's block.
        embedding_scale: the token embeddings are multiplied by it.
        layer_weights: ``"own"`` (correct) or ``"last"``: every block runs the last layer's
            weights (one block module shared by every layer).
        chained: False = every block reads the embeddings, not the previous block's output,
            so the last block's output alone reaches the head.
        final_norms: how many times ``ln_final`` is applied (pre-norm models with a norm).
        output: ``"logits"`` (correct), ``"probabilities"`` (softmax over the vocabulary) or
            ``"log_probabilities"`` (log-softmax).
        rope_with_learned_positions: learned position embeddings, and RoPE in attention all
            the same.

    Returns:
        ``(batch, seq, vocab_size)``.
    """
    cfg = resolve_config(config)
    ids = np.asarray(ids)
    seq = ids.shape[-1]
    x = embedding(weights["token_embeddings.weight"], ids) * embedding_scale
    if cfg["positions"] == "learned":
        x = x + np.asarray(weights["position_embeddings.weight"], dtype=np.float64)[:seq]
    block_cfg = cfg | ({"positions": "rope"} if rope_with_learned_positions else {})
    embedded = x
    for i in range(cfg["num_layers"]):
        prefix = f"layers.{cfg['num_layers'] - 1 if layer_weights == 'last' else i}."
        layer = {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
        h = x if chained else embedded
        if block is None:
            x = transformer_block(h, layer, num_heads=cfg["num_heads"], config=block_cfg)
        else:
            x = block_with(h, layer, num_heads=cfg["num_heads"], config=block_cfg, **block)
    if cfg["norm_position"] == "pre":
        for _ in range(final_norms):
            x = apply_norm(x, weights, "ln_final", cfg)
    head = weights["token_embeddings.weight" if cfg["tie_embeddings"] else "lm_head.weight"]
    logits = linear(x, head)
    if output == "probabilities":
        return softmax(logits, -1)
    if output == "log_probabilities":
        top = logits.max(-1, keepdims=True)
        return logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
    return logits
