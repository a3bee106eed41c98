"""A small functional Transformer assembled from replaceable parts, for mistakes made in one
component wherever it is used: the norm, RoPE, the causal mask, the attention, the
feed-forward, the embedding.

`Parts()` is correct; a wrong module replaces one part and assigns the `run_*` adapters of
`PartsAdapters(parts)` for the families that use it, e.g.
`run_rmsnorm = PartsAdapters(Parts(norm=by_mean_absolute)).run_rmsnorm`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from tests import adapters

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "output_proj")


def rmsnorm(x: Tensor, gain: Tensor, eps: float = 1e-5) -> Tensor:
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * gain).to(x.dtype)


def rope(
    x: Tensor,
    positions: Tensor,
    theta: float,
    *,
    exponent: float = 2.0,
    swap: bool = False,
    reverse: bool = False,
    shift: int = 0,
) -> Tensor:
    """Interleaved RoPE; pair k at position p (+ `shift`) turns by p·Θ^(-exponent·k/d_k),
    with cos and sin swapped (`swap`) or the angle negated (`reverse`)."""
    d = x.shape[-1]
    inv_freq = theta ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)
    angle = (positions[..., None].double() + shift) * inv_freq
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    if swap:
        cos, sin = sin, cos
    if reverse:
        sin = -sin
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def causal(seq: int) -> Tensor:
    return torch.ones(seq, seq, dtype=torch.bool).tril()


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float = 0.5) -> Tensor:
    """Scores divided by d_k**`scale` (√d_k), masked with -inf; a query whose keys are all
    masked gets zeros."""
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** scale
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return torch.nan_to_num(torch.softmax(scores, dim=-1)) @ v


def split_heads(t: Tensor, num_heads: int) -> Tensor:
    """(..., seq, d_model) → (..., heads, seq, d_k)."""
    return t.unflatten(-1, (num_heads, t.shape[-1] // num_heads)).transpose(-2, -3)


def merge_heads(o: Tensor) -> Tensor:
    """(..., heads, seq, d_k) → (..., seq, d_model)."""
    return o.transpose(-2, -3).flatten(-2)


def linear(x: Tensor, weight: Tensor) -> Tensor:
    return x @ weight.T


def swiglu(
    x: Tensor, w1: Tensor, w2: Tensor, w3: Tensor, *, linear: Callable[..., Tensor] = linear
) -> Tensor:
    a = linear(x, w1)
    return linear(a * torch.sigmoid(a) * linear(x, w3), w2)


def embed(table: Tensor, ids: Tensor) -> Tensor:
    return table[ids]


@dataclass(frozen=True)
class Parts:
    """`linear(x, weight)`, attention's projections and the output head (the feed-forward
    takes its own: `ffn=partial(swiglu, linear=...)`); `norm(x, gain, eps)`;
    `rope(x, positions, theta)`; `mask(seq)`, the causal mask;
    `attention(q, k, v, mask)`; `split(t, num_heads)` and `merge(o)`, the heads' layout;
    `ffn(x, w1, w2, w3)`; `embed(table, ids)`; `normalised_stream`: each residual added to
    the sublayer's normalised input instead of the stream; `attention_norm`: False =
    attention reads the stream without ln1; `layers(num_layers)`: which layer's weights each
    block of the LM runs, in order."""

    linear: Callable[[Tensor, Tensor], Tensor] = linear
    norm: Callable[..., Tensor] = rmsnorm
    rope: Callable[..., Tensor] = rope
    mask: Callable[[int], Tensor] = causal
    attention: Callable[..., Tensor] = attention
    split: Callable[[Tensor, int], Tensor] = split_heads
    merge: Callable[[Tensor], Tensor] = merge_heads
    ffn: Callable[..., Tensor] = swiglu
    embed: Callable[..., Tensor] = embed
    normalised_stream: bool = False
    attention_norm: bool = True
    layers: Callable[[int], Sequence[int]] = range


def mha(
    p: Parts,
    x: Tensor,
    w: list[Tensor],
    num_heads: int,
    theta: float | None = None,
    positions: Tensor | None = None,
) -> Tensor:
    """Causal multi-head self-attention; `w`: the q, k, v and output projections."""
    seq = x.shape[-2]
    q, k, v = (p.split(p.linear(x, weight), num_heads) for weight in w[:3])
    if theta is not None:
        pos = torch.arange(seq) if positions is None else positions
        pos = pos.unsqueeze(-2) if pos.ndim > 1 else pos
        q, k = p.rope(q, pos, theta), p.rope(k, pos, theta)
    out = p.attention(q, k, v, p.mask(seq))
    return p.linear(p.merge(out), w[3])


def block(p: Parts, x: Tensor, w: dict[str, Tensor], num_heads: int, theta: float) -> Tensor:
    attn = [w[f"attn.{name}.weight"] for name in PROJECTIONS]
    ffn = (w["ffn.w1.weight"], w["ffn.w2.weight"], w["ffn.w3.weight"])
    n1 = p.norm(x, w["ln1.weight"]) if p.attention_norm else x
    h = (n1 if p.normalised_stream else x) + mha(p, n1, attn, num_heads, theta)
    n2 = p.norm(h, w["ln2.weight"])
    return (n2 if p.normalised_stream else h) + p.ffn(n2, *ffn)


def lm(
    p: Parts,
    ids: Tensor,
    w: dict[str, Tensor],
    num_layers: int,
    num_heads: int,
    theta: float,
    context_length: int,
) -> Tensor:
    if ids.shape[-1] > context_length:
        raise ValueError(f"sequence length {ids.shape[-1]} exceeds context_length {context_length}")
    x = p.embed(w["token_embeddings.weight"], ids)
    for i in p.layers(num_layers):
        prefix = f"layers.{i}."
        layer = {k.removeprefix(prefix): v for k, v in w.items() if k.startswith(prefix)}
        x = block(p, x, layer, num_heads, theta)
    return p.linear(p.norm(x, w["ln_final.weight"]), w["lm_head.weight"])


class PartsAdapters:
    """The `run_*` adapters of the model assembled from `parts`."""

    def __init__(self, parts: Parts):
        self.p = parts

    def run_linear(self, d_in, d_out, weights, in_features):
        return self.p.linear(in_features, weights)

    def run_rmsnorm(self, d_model, eps, weights, in_features):
        return self.p.norm(in_features, weights, eps)

    def run_swiglu(self, d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features):
        return self.p.ffn(in_features, w1_weight, w2_weight, w3_weight)

    def run_embedding(self, vocab_size, d_model, weights, token_ids):
        return self.p.embed(weights, token_ids)

    def run_rope(self, d_k, theta, max_seq_len, in_query_or_key, token_positions):
        return self.p.rope(in_query_or_key, token_positions, theta)

    def run_scaled_dot_product_attention(self, Q, K, V, mask=None):
        return self.p.attention(Q, K, V, mask)

    def run_multihead_self_attention(
        self, d_model, num_heads, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight,
        in_features,
    ):  # fmt: skip
        w = [q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight]
        return mha(self.p, in_features, w, num_heads)

    def run_multihead_self_attention_with_rope(
        self, d_model, num_heads, max_seq_len, theta, q_proj_weight, k_proj_weight,
        v_proj_weight, o_proj_weight, in_features, token_positions=None,
    ):  # fmt: skip
        w = [q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight]
        return mha(self.p, in_features, w, num_heads, theta, token_positions)

    def run_transformer_block(
        self, d_model, num_heads, d_ff, max_seq_len, theta, weights, in_features
    ):
        return block(self.p, in_features, weights, num_heads, theta)

    def run_transformer_lm(
        self, vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta,
        weights, in_indices,
    ):  # fmt: skip
        return lm(self.p, in_indices, weights, num_layers, num_heads, rope_theta, context_length)


class ProjectionAdapters:
    """The correct multi-head attention, block and LM adapters, run with every attention's
    projections changed by `change(q, k, v, o, num_heads) -> (q, k, v, o)`: a mistake in how
    multi-head attention uses its weights, written as the weights that show it."""

    NAMES = ("q_proj_weight", "k_proj_weight", "v_proj_weight", "o_proj_weight")

    def __init__(self, change: Callable[..., tuple[Tensor, Tensor, Tensor, Tensor]]):
        self.change = change

    def _projections(self, kwargs: dict) -> dict:
        changed = self.change(*(kwargs[n] for n in self.NAMES), kwargs["num_heads"])
        return kwargs | dict(zip(self.NAMES, changed, strict=True))

    def _weights(self, kwargs: dict) -> dict:
        weights = dict(kwargs["weights"])
        for name in kwargs["weights"]:
            if name.endswith("attn.q_proj.weight"):
                prefix = name.removesuffix("q_proj.weight")
                names = [f"{prefix}{p}.weight" for p in PROJECTIONS]
                changed = self.change(*(weights[n] for n in names), kwargs["num_heads"])
                weights |= dict(zip(names, changed, strict=True))
        return kwargs | {"weights": weights}

    def run_multihead_self_attention(self, **kwargs):
        return adapters.run_multihead_self_attention(**self._projections(kwargs))

    def run_multihead_self_attention_with_rope(self, **kwargs):
        return adapters.run_multihead_self_attention_with_rope(**self._projections(kwargs))

    def run_transformer_block(self, **kwargs):
        return adapters.run_transformer_block(**self._weights(kwargs))

    def run_transformer_lm(self, **kwargs):
        return adapters.run_transformer_lm(**self._weights(kwargs))
