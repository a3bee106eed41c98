"""A small functional Transformer in which known mistakes can be switched on one at a time.

Each wrong adapters module beside this file takes the correct adapters and replaces one or
two `run_*` functions with this model under one `Mistakes` switch, so the meta-test can show
which test family catches which mistake. With every switch off the model is correct (the
meta-test checks that too, through `tests/evidence/wrong/no_mistake.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from einops import rearrange
from torch import Tensor


@dataclass(frozen=True)
class Mistakes:
    attention_scale: str = "d_k"  # "none": no 1/√d_k; "d_v": scale by √d_v
    nan_on_fully_masked_rows: bool = False  # -inf fill, so an empty row is 0/0
    causal: bool = True
    rope_pairing: str = "interleaved"  # "half": x[k] with x[k + d/2]
    rope_on_values: bool = False
    rope_on_keys: bool = True  # False: RoPE rotates the queries only
    rope_on_queries: bool = True  # False: RoPE rotates the keys only
    ignore_positions: bool = False  # assume positions 0..seq-1
    strided_heads: bool = False  # head h = rows h, h+H, h+2H, ... instead of a block
    post_norm: bool = False
    shared_block_norm: bool = False  # ln1's gain used for both norms
    final_norm: bool = True
    tied_head: bool = False  # token_embeddings used as the output head
    pad_to_context: bool = False  # left-pad short inputs to the context length


NONE = Mistakes()


def rmsnorm(x: Tensor, gain: Tensor, eps: float = 1e-5) -> Tensor:
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * gain).to(x.dtype)


def swiglu(x: Tensor, w1: Tensor, w2: Tensor, w3: Tensor) -> Tensor:
    a = x @ w1.T
    return (a * torch.sigmoid(a) * (x @ w3.T)) @ w2.T


def rope(x: Tensor, positions: Tensor, theta: float, m: Mistakes = NONE) -> Tensor:
    d = x.shape[-1]
    if m.ignore_positions:
        positions = torch.arange(x.shape[-2])
    angle = positions[..., None].double() * theta ** (-torch.arange(0, d, 2).double() / d)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    if m.rope_pairing == "half":
        a, b = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, m: Mistakes = NONE) -> Tensor:
    scores = q @ k.transpose(-1, -2)
    if m.attention_scale != "none":
        scores = scores / math.sqrt(q.shape[-1] if m.attention_scale == "d_k" else v.shape[-1])
    if mask is None:
        return torch.softmax(scores, dim=-1) @ v
    if m.nan_on_fully_masked_rows:
        return torch.softmax(scores.masked_fill(~mask, -torch.inf), dim=-1) @ v
    probs = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)
    return (probs * mask) @ v


def mha(
    x: Tensor,
    w: dict[str, Tensor],
    num_heads: int,
    theta: float | None = None,
    positions: Tensor | None = None,
    m: Mistakes = NONE,
) -> Tensor:
    """`w` holds `q_proj.weight`, `k_proj.weight`, `v_proj.weight`, `output_proj.weight`."""
    seq = x.shape[-2]
    layout = "... s (d h) -> ... h s d" if m.strided_heads else "... s (h d) -> ... h s d"
    q, k, v = (rearrange(x @ w[f"{p}_proj.weight"].T, layout, h=num_heads) for p in ("q", "k", "v"))
    if theta is not None:
        pos = torch.arange(seq) if positions is None else positions
        pos = pos[..., None, :] if pos.ndim > 1 else pos
        if m.rope_on_queries:
            q = rope(q, pos, theta, m)
        if m.rope_on_keys:
            k = rope(k, pos, theta, m)
        if m.rope_on_values:
            v = rope(v, pos, theta, m)
    mask = torch.ones(seq, seq, dtype=torch.bool).tril() if m.causal else None
    out = attention(q, k, v, mask, m)
    merge = "... h s d -> ... s (d h)" if m.strided_heads else "... h s d -> ... s (h d)"
    return rearrange(out, merge) @ w["output_proj.weight"].T


def block(x: Tensor, w: dict[str, Tensor], num_heads: int, theta: float, m: Mistakes = NONE):
    """`w` is named relative to the block: `ln1.weight`, `attn.q_proj.weight`, `ffn.w1.weight`."""
    attn = {k.removeprefix("attn."): v for k, v in w.items() if k.startswith("attn.")}
    ln2 = w["ln1.weight"] if m.shared_block_norm else w["ln2.weight"]

    def ffn(h: Tensor) -> Tensor:
        return swiglu(h, w["ffn.w1.weight"], w["ffn.w2.weight"], w["ffn.w3.weight"])

    if m.post_norm:
        h = rmsnorm(x + mha(x, attn, num_heads, theta, m=m), w["ln1.weight"])
        return rmsnorm(h + ffn(h), ln2)
    h = x + mha(rmsnorm(x, w["ln1.weight"]), attn, num_heads, theta, m=m)
    return h + ffn(rmsnorm(h, ln2))


def lm(
    ids: Tensor,
    w: dict[str, Tensor],
    num_layers: int,
    num_heads: int,
    theta: float,
    context_length: int,
    m: Mistakes = NONE,
) -> Tensor:
    seq = ids.shape[-1]
    if seq > context_length:
        raise ValueError(f"sequence length {seq} exceeds context_length {context_length}")
    if m.pad_to_context and seq < context_length:
        ids = torch.cat([ids.new_zeros(*ids.shape[:-1], context_length - seq), ids], dim=-1)
    x = w["token_embeddings.weight"][ids]
    for i in range(num_layers):
        layer = {
            k.removeprefix(f"layers.{i}."): v for k, v in w.items() if k.startswith(f"layers.{i}.")
        }
        x = block(x, layer, num_heads, theta, m)
    if m.final_norm:
        x = rmsnorm(x, w["ln_final.weight"])
    head = w["token_embeddings.weight"] if m.tied_head else w["lm_head.weight"]
    return (x @ head.T)[..., -seq:, :]


class MistakenAdapters:
    """The `run_*` adapters of this model under `mistakes`; a wrong module assigns the ones it
    replaces, e.g. `run_rope = MistakenAdapters(Mistakes(rope_pairing="half")).run_rope`."""

    def __init__(self, mistakes: Mistakes = NONE):
        self.m = mistakes

    def run_rope(self, d_k, theta, max_seq_len, in_query_or_key, token_positions):
        return rope(in_query_or_key, token_positions, theta, self.m)

    def run_scaled_dot_product_attention(self, Q, K, V, mask=None):
        return attention(Q, K, V, mask, self.m)

    def run_multihead_self_attention(
        self,
        d_model,
        num_heads,
        q_proj_weight,
        k_proj_weight,
        v_proj_weight,
        o_proj_weight,
        in_features,
    ):
        w = _projections(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight)
        return mha(in_features, w, num_heads, m=self.m)

    def run_multihead_self_attention_with_rope(
        self,
        d_model,
        num_heads,
        max_seq_len,
        theta,
        q_proj_weight,
        k_proj_weight,
        v_proj_weight,
        o_proj_weight,
        in_features,
        token_positions=None,
    ):
        w = _projections(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight)
        return mha(in_features, w, num_heads, theta, token_positions, m=self.m)

    def run_transformer_block(
        self, d_model, num_heads, d_ff, max_seq_len, theta, weights, in_features
    ):
        return block(in_features, weights, num_heads, theta, self.m)

    def run_transformer_lm(
        self,
        vocab_size,
        context_length,
        d_model,
        num_layers,
        num_heads,
        d_ff,
        rope_theta,
        weights,
        in_indices,
    ):
        return lm(in_indices, weights, num_layers, num_heads, rope_theta, context_length, self.m)


def _projections(q: Tensor, k: Tensor, v: Tensor, o: Tensor) -> dict[str, Tensor]:
    return {"q_proj.weight": q, "k_proj.weight": k, "v_proj.weight": v, "output_proj.weight": o}
