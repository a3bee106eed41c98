"""Float64 reference math for rotary position embeddings and attention.

Every function converts its array inputs to float64 and returns float64. Shapes use ``...``
for any number of leading dimensions. Each function's ``*_backward`` follows it (conventions:
`gradients`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cs336_staff.oracle.functional import f64, linear, linear_backward
from cs336_staff.oracle.gradients import Grads, prefixed, unbroadcast

__all__ = [
    "multihead_self_attention",
    "multihead_self_attention_backward",
    "rope",
    "rope_backward",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward",
]

Array = NDArray[np.float64]

ROPE_PAIRINGS = ("interleaved", "half")


def _int_positions(positions: ArrayLike, target_shape: tuple[int, ...], where: str) -> NDArray:
    positions = np.asarray(positions)
    if not np.issubdtype(positions.dtype, np.integer):
        raise TypeError(f"{where}: positions must be integers, got {positions.dtype}")
    try:
        return np.broadcast_to(positions, target_shape)
    except ValueError:
        raise ValueError(
            f"{where}: positions {positions.shape} do not broadcast to {target_shape}"
        ) from None


def rope(x: ArrayLike, positions: ArrayLike, theta: float, pairing: str = "interleaved") -> Array:
    """Rotary position embedding.

    Pair ``k`` (``k = 0 … d_k/2 - 1``) at position ``p`` is rotated by the angle
    ``p · theta**(-2k/d_k)``: ``(a, b) → (a cos - b sin, a sin + b cos)``.

    Args:
        x: ``(..., seq, d_k)`` with ``d_k`` even.
        positions: integer array broadcastable to ``x.shape[:-1]``, i.e. ``(..., seq)``;
            need not be ``0 … seq-1``.
        theta: the RoPE base Θ.
        pairing: ``"interleaved"`` pairs ``(x[2k], x[2k+1])`` (the SPEC default);
            ``"half"`` pairs ``(x[k], x[k + d_k/2])`` ("rotate half").

    Returns:
        same shape as ``x``.
    """
    x = np.asarray(x, dtype=np.float64)
    d_k = x.shape[-1]
    if d_k % 2 != 0:
        raise ValueError(f"rope: d_k must be even, got {d_k}")
    pos = _int_positions(positions, x.shape[:-1], "rope").astype(np.float64)

    k = np.arange(d_k // 2, dtype=np.float64)
    inv_freq = float(theta) ** (-2.0 * k / d_k)  # (d_k/2,)
    angle = pos[..., None] * inv_freq  # (..., seq, d_k/2)
    cos, sin = np.cos(angle), np.sin(angle)

    if pairing == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
    elif pairing == "half":
        a, b = x[..., : d_k // 2], x[..., d_k // 2 :]
    else:
        raise ValueError(f"rope: pairing must be one of {ROPE_PAIRINGS}, got {pairing!r}")

    out = np.empty_like(x)
    rotated_a = a * cos - b * sin
    rotated_b = a * sin + b * cos
    if pairing == "interleaved":
        out[..., 0::2], out[..., 1::2] = rotated_a, rotated_b
    else:
        out[..., : d_k // 2], out[..., d_k // 2 :] = rotated_a, rotated_b
    return out


def rope_backward(
    x: ArrayLike, positions: ArrayLike, theta: float, d_out: ArrayLike, pairing: str = "interleaved"
) -> Grads:
    """Of ``rope(x, positions, theta, pairing)``. Returns ``x``.

    Each pair is rotated by an orthogonal matrix, whose transpose is the rotation by the
    opposite angle: the gradient is ``d_out`` rotated back, i.e. RoPE at ``-positions``
    (``x`` itself is not needed: the map is linear).
    """
    if np.shape(d_out) != np.shape(x):
        raise ValueError(f"rope_backward: d_out {np.shape(d_out)} for x {np.shape(x)}")
    return {"x": rope(d_out, -np.asarray(positions), theta, pairing)}


def scaled_dot_product_attention(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, mask: ArrayLike | None = None
) -> Array:
    """``softmax(q kᵀ / sqrt(d_k), masked) v``.

    Args:
        q: ``(..., n, d_k)``.
        k: ``(..., m, d_k)``.
        v: ``(..., m, d_v)``.
        mask: boolean ``(..., n, m)``, broadcastable against the scores; ``True`` = the query
            may attend to the key. None = attend everywhere.

    Returns:
        ``(..., n, d_v)``. A query whose keys are all masked gets exactly zero.
    """
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)  # (..., n, m)
    if mask is None:
        allowed = np.ones(scores.shape, dtype=bool)
    else:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"scaled_dot_product_attention: mask must be boolean, got {mask.dtype}")
        allowed = np.broadcast_to(mask, np.broadcast_shapes(mask.shape, scores.shape))
        scores = np.broadcast_to(scores, allowed.shape)

    # Softmax over allowed keys only: masked entries contribute exactly 0 to numerator and
    # denominator, and a row with nothing allowed divides 0 by 1 instead of 0 by 0.
    row_max = np.max(np.where(allowed, scores, -np.inf), axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    numer = np.where(allowed, np.exp(np.where(allowed, scores - row_max, 0.0)), 0.0)
    denom = np.sum(numer, axis=-1, keepdims=True)
    weights = numer / np.where(denom > 0, denom, 1.0)
    return weights @ v


def attention_probabilities(q: ArrayLike, k: ArrayLike, mask: ArrayLike | None = None) -> Array:
    """``softmax(q kᵀ / sqrt(d_k), masked)``, ``(..., n, m)``, a fully masked row all zero."""
    m = np.shape(k)[-2]
    # The forward's attention with V = I returns its weights themselves (each output entry
    # is one weight times 1, exactly), so the probabilities are the forward oracle's own.
    return scaled_dot_product_attention(q, k, np.eye(m), mask)


def scaled_dot_product_attention_backward(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, d_out: ArrayLike, mask: ArrayLike | None = None
) -> Grads:
    """Of ``softmax(q kᵀ / sqrt(d_k), masked) v`` (shapes as the forward). Returns ``q``,
    ``k``, ``v``, each summed back to its own shape where it was broadcast.

    Masked scores get no gradient: their probability is exactly 0, so the softmax backward
    ``p (d_p - sum(p d_p))`` is 0 there, and a fully masked row passes nothing back.
    """
    q, k, v, d_out = f64(q), f64(k), f64(v), f64(d_out)
    scale = 1.0 / math.sqrt(q.shape[-1])
    p = attention_probabilities(q, k, mask)
    d_v = np.swapaxes(p, -1, -2) @ d_out
    d_p = d_out @ np.swapaxes(v, -1, -2)
    d_scores = p * (d_p - np.sum(p * d_p, axis=-1, keepdims=True)) * scale
    return {
        "q": unbroadcast(d_scores @ k, q.shape),
        "k": unbroadcast(np.swapaxes(d_scores, -1, -2) @ q, k.shape),
        "v": unbroadcast(d_v, v.shape),
    }


def multihead_self_attention(
    x: ArrayLike,
    q_weight: ArrayLike,
    k_weight: ArrayLike,
    v_weight: ArrayLike,
    o_weight: ArrayLike,
    num_heads: int,
    *,
    theta: float | None = None,
    positions: ArrayLike | None = None,
    pairing: str = "interleaved",
    q_bias: ArrayLike | None = None,
    k_bias: ArrayLike | None = None,
    v_bias: ArrayLike | None = None,
    o_bias: ArrayLike | None = None,
) -> Array:
    """Causal multi-head self-attention, optionally with RoPE on queries and keys.

    Args:
        x: ``(..., seq, d_model)``.
        q_weight, k_weight, v_weight, o_weight: ``(d_model, d_model)`` each; rows
            ``h·d_k … (h+1)·d_k - 1`` of the q/k/v projections belong to head ``h``, and the
            output projection reads the heads concatenated in head order.
        num_heads: number of heads; ``d_k = d_v = d_model / num_heads``.
        theta: RoPE base; None = no RoPE.
        positions: integer positions broadcastable to ``(..., seq)``; default
            ``arange(seq)``. Used only with RoPE.
        pairing: RoPE pairing, ``"interleaved"`` or ``"half"``.
        q_bias, k_bias, v_bias, o_bias: optional ``(d_model,)`` biases.

    Returns:
        ``(..., seq, d_model)``.
    """
    x = np.asarray(x, dtype=np.float64)
    seq, d_model = x.shape[-2], x.shape[-1]
    if num_heads <= 0 or d_model % num_heads != 0:
        raise ValueError(f"multihead_self_attention: {num_heads} heads do not divide {d_model}")
    d_k = d_model // num_heads

    def split_heads(t: Array) -> Array:
        # (..., seq, d_model) -> (..., heads, seq, d_k)
        return np.swapaxes(t.reshape(*t.shape[:-1], num_heads, d_k), -2, -3)

    q = split_heads(linear(x, q_weight, q_bias))
    k = split_heads(linear(x, k_weight, k_bias))
    v = split_heads(linear(x, v_weight, v_bias))

    if theta is not None:
        pos = np.arange(seq) if positions is None else positions
        pos = _int_positions(pos, x.shape[:-1], "multihead_self_attention")
        # Every head shares the positions: add a head axis in front of seq.
        pos = np.expand_dims(pos, -2)
        q = rope(q, pos, theta, pairing)
        k = rope(k, pos, theta, pairing)

    causal = np.tril(np.ones((seq, seq), dtype=bool))
    heads = scaled_dot_product_attention(q, k, v, causal)  # (..., heads, seq, d_k)
    concatenated = np.swapaxes(heads, -2, -3).reshape(*x.shape[:-1], d_model)
    return linear(concatenated, o_weight, o_bias)


def multihead_self_attention_backward(
    x: ArrayLike,
    q_weight: ArrayLike,
    k_weight: ArrayLike,
    v_weight: ArrayLike,
    o_weight: ArrayLike,
    num_heads: int,
    d_out: ArrayLike,
    *,
    theta: float | None = None,
    positions: ArrayLike | None = None,
    pairing: str = "interleaved",
    q_bias: ArrayLike | None = None,
    k_bias: ArrayLike | None = None,
    v_bias: ArrayLike | None = None,
    o_bias: ArrayLike | None = None,
) -> Grads:
    """Of causal multi-head self-attention, with RoPE when ``theta`` is given (arguments as
    ``multihead_self_attention``). Returns ``x``, ``q_proj.weight``, ``k_proj.weight``,
    ``v_proj.weight``, ``output_proj.weight`` and the ``*.bias`` given."""
    x = f64(x)
    seq, d_model = x.shape[-2], x.shape[-1]
    if num_heads <= 0 or d_model % num_heads != 0:
        raise ValueError(f"multihead_self_attention: {num_heads} heads do not divide {d_model}")
    d_k = d_model // num_heads

    def split_heads(t: Array) -> Array:  # (..., seq, d_model) -> (..., heads, seq, d_k)
        return np.swapaxes(t.reshape(*t.shape[:-1], num_heads, d_k), -2, -3)

    def merge_heads(t: Array) -> Array:  # the inverse of split_heads
        return np.swapaxes(t, -2, -3).reshape(*x.shape[:-1], d_model)

    projections = {
        "q_proj.": (q_weight, q_bias),
        "k_proj.": (k_weight, k_bias),
        "v_proj.": (v_weight, v_bias),
    }
    q, k, v = (split_heads(linear(x, w, b)) for w, b in projections.values())
    if theta is not None:
        pos = np.arange(seq) if positions is None else np.asarray(positions)
        pos = np.expand_dims(np.broadcast_to(pos, x.shape[:-1]), -2)  # one row for every head
        q_in, k_in = q, k
        q, k = rope(q_in, pos, theta, pairing), rope(k_in, pos, theta, pairing)
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    heads = scaled_dot_product_attention(q, k, v, causal)

    out = linear_backward(merge_heads(heads), o_weight, d_out, o_bias)
    attn = scaled_dot_product_attention_backward(q, k, v, split_heads(out["x"]), causal)
    if theta is not None:
        attn["q"] = rope_backward(q_in, pos, theta, attn["q"], pairing)["x"]
        attn["k"] = rope_backward(k_in, pos, theta, attn["k"], pairing)["x"]
    grads: Grads = {"x": np.zeros_like(x)}
    for (prefix, (w, b)), name in zip(projections.items(), ("q", "k", "v"), strict=True):
        projection = linear_backward(x, w, merge_heads(attn[name]), b)
        grads["x"] += projection["x"]
        grads |= prefixed(projection, prefix)
    return grads | prefixed(out, "output_proj.")
