"""The default model assembled from replaceable parts, in float64: a mistake made in one
component (the norm, RoPE, the causal mask, the attention, the feed-forward, the embedding)
shows wherever that component is used, in multi-head attention, the block and the LM.

`Parts()` is the oracle's own architecture (pre-norm RMSNorm, interleaved RoPE, SwiGLU);
`everywhere(parts, families)` gives the variants of the families built from the changed
part."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cs336_harness.judging.diagnosis.numpy_cases import NumpyCase
from cs336_staff import oracle
from cs336_staff.catalog.mistake import Variant
from cs336_staff.catalog.reading import BLOCK, LM, MHA, MHA_ROPE, f64, mha_weights

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "output_proj")
EPS = 1e-5


def causal(seq: int) -> np.ndarray:
    return np.tril(np.ones((seq, seq), dtype=bool))


def split_heads(t: np.ndarray, num_heads: int) -> np.ndarray:
    """(..., seq, d_model) → (..., heads, seq, d_k): head h is features h·d_k … (h+1)·d_k − 1."""
    return np.swapaxes(t.reshape(*t.shape[:-1], num_heads, t.shape[-1] // num_heads), -2, -3)


def merge_heads(o: np.ndarray) -> np.ndarray:
    """(..., heads, seq, d_k) → (..., seq, d_model), head after head."""
    heads, seq, d_k = o.shape[-3:]
    return np.swapaxes(o, -2, -3).reshape(*o.shape[:-3], seq, heads * d_k)


@dataclass(frozen=True)
class Parts:
    """`linear(x, weight)`, attention's projections; `norm(x, gain, eps)`;
    `rope(heads, positions, theta)` on `(..., heads, seq, d_k)`
    with positions `(..., 1, seq)`; `mask(seq)` the causal mask; `attention(q, k, v, mask)`;
    `split(t, num_heads)` and `merge(o)` the heads' layout; `ffn(x, w1, w2, w3)`;
    `embed(table, ids)`; `normalised_stream`: each sublayer's residual is added to its
    normalised input (`h = ln1(x) + attn(ln1(x))`) instead of the stream itself;
    `attention_norm`: False = attention reads the stream without ln1 (`h = x + attn(x)`);
    `layers(num_layers)`: which layer's weights each block of the LM runs, in order."""

    linear: Callable[[np.ndarray, np.ndarray], np.ndarray] = oracle.linear
    norm: Callable[..., np.ndarray] = oracle.rmsnorm
    rope: Callable[..., np.ndarray] = oracle.rope
    mask: Callable[[int], np.ndarray] = causal
    attention: Callable[..., np.ndarray] = oracle.scaled_dot_product_attention
    split: Callable[[np.ndarray, int], np.ndarray] = split_heads
    merge: Callable[[np.ndarray], np.ndarray] = merge_heads
    ffn: Callable[..., np.ndarray] = oracle.swiglu
    embed: Callable[..., np.ndarray] = oracle.embedding
    normalised_stream: bool = False
    attention_norm: bool = True
    layers: Callable[[int], Sequence[int]] = range


def attention(
    parts: Parts,
    x: np.ndarray,
    weights: list[np.ndarray],
    num_heads: int,
    theta: float | None = None,
    positions: np.ndarray | None = None,
) -> np.ndarray:
    """Causal multi-head self-attention with `parts`' RoPE (where `theta` is given), mask and
    attention; `weights` are the q, k, v and output projections."""
    x = f64(x)
    seq = x.shape[-2]
    q, k, v = (parts.split(parts.linear(x, w), num_heads) for w in weights[:3])
    if theta is not None:
        pos = np.arange(seq) if positions is None else np.asarray(positions)
        pos = np.expand_dims(np.broadcast_to(pos, x.shape[:-1]), -2)
        q, k = parts.rope(q, pos, theta), parts.rope(k, pos, theta)
    out = parts.attention(q, k, v, parts.mask(seq))
    return parts.linear(parts.merge(out), weights[3])


def block(
    parts: Parts, x: np.ndarray, w: Mapping[str, np.ndarray], num_heads: int, theta: float
) -> np.ndarray:
    """The pre-norm block, `w` named relative to it (`ln1.weight`, `attn.q_proj.weight`, ...)."""
    attn = [w[f"attn.{p}.weight"] for p in PROJECTIONS]
    ffn = (w["ffn.w1.weight"], w["ffn.w2.weight"], w["ffn.w3.weight"])
    x = f64(x)
    n1 = parts.norm(x, w["ln1.weight"], EPS) if parts.attention_norm else x
    h = (n1 if parts.normalised_stream else x) + attention(parts, n1, attn, num_heads, theta)
    n2 = parts.norm(h, w["ln2.weight"], EPS)
    return (n2 if parts.normalised_stream else h) + parts.ffn(n2, *ffn)


def lm(parts: Parts, c: NumpyCase) -> np.ndarray:
    p, w = c.params, c.weights
    x = parts.embed(w["token_embeddings.weight"], c.inputs["in_indices"])
    for i in parts.layers(p["num_layers"]):
        prefix = f"layers.{i}."
        layer = {k.removeprefix(prefix): v for k, v in w.items() if k.startswith(prefix)}
        x = block(parts, x, layer, p["num_heads"], p["rope_theta"])
    return oracle.linear(parts.norm(x, w["ln_final.weight"], EPS), w["lm_head.weight"])


def _mha(parts: Parts) -> Variant:
    def variant(c: NumpyCase) -> np.ndarray:
        theta = c.params["theta"] if c.family == MHA_ROPE else None
        positions = c.inputs.get("token_positions")
        x = c.inputs["in_features"]
        return attention(parts, x, mha_weights(c), c.params["num_heads"], theta, positions)

    return variant


def _block(parts: Parts) -> Variant:
    def variant(c: NumpyCase) -> np.ndarray:
        p = c.params
        return block(parts, c.inputs["in_features"], c.weights, p["num_heads"], p["theta"])

    return variant


def everywhere(
    parts: Parts, families: Collection[str] = (MHA, MHA_ROPE, BLOCK, *LM)
) -> dict[str, Variant]:
    """Variants of `families` (multi-head attention with and without RoPE, the block, the
    LMs) built with `parts`."""
    makers = {MHA: _mha, MHA_ROPE: _mha, BLOCK: _block} | dict.fromkeys(
        LM, lambda parts: lambda c: lm(parts, c)
    )
    return {family: makers[family](parts) for family in families}
