"""Rotary position embeddings, scaled dot-product attention and causal multi-head attention."""

import math

import torch
from einops import einsum, rearrange
from torch import Tensor, nn

from cs336_basics.layers import Linear, softmax


class RotaryPositionalEmbedding(nn.Module):
    """RoPE on adjacent pairs ``(x[2k], x[2k+1])``: ``(..., seq, d_k)`` -> same."""

    def __init__(self, theta: float, d_k: int, max_seq_len: int, device=None):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, d_k, 2, device=device).float() / d_k))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: Tensor, token_positions: Tensor) -> Tensor:
        # Angles from the positions themselves: no table, so no limit on the position.
        angles = einsum(token_positions.float(), self.inv_freq, "... seq, half -> ... seq half")
        cos, sin = torch.cos(angles), torch.sin(angles)  # (..., seq, d_k/2)
        x_even, x_odd = x[..., 0::2], x[..., 1::2]
        rotated = torch.stack((x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1)
        return rotated.flatten(-2).to(x.dtype)


def scaled_dot_product_attention(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None
) -> Tensor:
    """``softmax(Q Kᵀ / sqrt(d_k)) V``; Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v).

    ``mask`` (..., n, m) is boolean, True where a query may attend to a key.
    """
    scores = einsum(Q, K, "... n d_k, ... m d_k -> ... n m") / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return einsum(softmax(scores, dim=-1), V, "... n m, ... m d_v -> ... n d_v")


class MultiHeadSelfAttention(nn.Module):
    """Causal multi-head self-attention, RoPE optional: ``(..., seq, d_model)`` -> same."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        max_seq_len: int | None = None,
        theta: float | None = None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        self.k_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        self.v_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        self.output_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        self.rope = None
        if theta is not None and max_seq_len is not None:
            d_k = d_model // num_heads
            self.rope = RotaryPositionalEmbedding(theta, d_k, max_seq_len, device=device)

    def forward(self, x: Tensor, token_positions: Tensor | None = None) -> Tensor:
        seq = x.shape[-2]
        q, k, v = (
            rearrange(proj(x), "... seq (heads d) -> ... heads seq d", heads=self.num_heads)
            for proj in (self.q_proj, self.k_proj, self.v_proj)
        )
        if self.rope is not None:
            if token_positions is None:
                token_positions = torch.arange(seq, device=x.device)
            positions = rearrange(token_positions, "... seq -> ... 1 seq")  # same for every head
            q, k = self.rope(q, positions), self.rope(k, positions)
        causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool, device=x.device))
        out = scaled_dot_product_attention(q, k, v, causal)
        return self.output_proj(rearrange(out, "... heads seq d -> ... seq (heads d)"))
