"""Causal multi-head self-attention with optional RoPE."""

from __future__ import annotations

import itertools

import torch
from einops import rearrange
from jaxtyping import Float, Int
from torch import Tensor, nn

from cs336_basics._checks import (
    check_broadcastable_to,
    check_dropout_rate,
    check_integer_tensor,
    check_last_dim,
    check_min_ndim,
    check_positive_int,
)
from cs336_basics.attention import scaled_dot_product_attention
from cs336_basics.linear import Linear
from cs336_basics.rope import RotaryPositionalEmbedding

# Causal attention runs over blocks of this many queries (see `forward`): fewer blocks
# compute more of the scores the mask throws away, more blocks run more, smaller, ops.
QUERY_BLOCK = 128


class MultiHeadSelfAttention(nn.Module):
    """Causal self-attention with ``num_heads`` heads of size ``d_k = d_v = d_model / num_heads``.

    ``q_proj``/``k_proj``/``v_proj``/``output_proj`` are ``Linear(d_model, d_model)``, with
    biases only when ``bias=True`` (GPT-2). Each of q/k/v is one matmul for all heads: rows
    ``h·d_k … (h+1)·d_k - 1`` of its weight are head ``h``. RoPE is applied iff ``theta`` is
    given (then ``max_seq_len`` is required), with the given ``rope_pairing``; it rotates Q
    and K of every head with the same positions, never V. Query ``i`` attends keys ``j ≤ i``
    by sequence index, whatever the token positions are. ``attn_dropout`` drops attention
    probabilities in training mode only.

    ``forward(x, token_positions=None)``: ``x (..., seq, d_model)`` → ``(..., seq, d_model)``;
    ``token_positions`` (broadcastable to ``(..., seq)``, default ``0 … seq-1``) only
    matters when RoPE is on and is ignored otherwise.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        max_seq_len: int | None = None,
        theta: float | None = None,
        rope_pairing: str = "interleaved",
        bias: bool = False,
        attn_dropout: float = 0.0,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        owner = "MultiHeadSelfAttention"
        check_positive_int(owner, "d_model", d_model)
        check_positive_int(owner, "num_heads", num_heads)
        if d_model % num_heads != 0:
            raise ValueError(
                f"{owner}: d_model must be divisible by num_heads, "
                f"got d_model={d_model}, num_heads={num_heads}"
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads

        check_dropout_rate(owner, "attn_dropout", attn_dropout)
        self.attn_dropout = float(attn_dropout)

        self.q_proj = Linear(d_model, d_model, bias, device=device, dtype=dtype)
        self.k_proj = Linear(d_model, d_model, bias, device=device, dtype=dtype)
        self.v_proj = Linear(d_model, d_model, bias, device=device, dtype=dtype)
        self.output_proj = Linear(d_model, d_model, bias, device=device, dtype=dtype)
        # Parameter-free (its tables are non-persistent), so the state dict holds exactly
        # the four projections' parameters with or without RoPE.
        self.rope: RotaryPositionalEmbedding | None = None
        if theta is not None:
            if max_seq_len is None:
                raise ValueError(f"{owner}: RoPE (theta={theta}) needs max_seq_len, got None")
            self.rope = RotaryPositionalEmbedding(
                theta, self.d_k, max_seq_len, rope_pairing, device=device, dtype=dtype
            )

    def forward(
        self,
        x: Float[Tensor, "*batch seq d_model"],
        token_positions: Int[Tensor, "... seq"] | None = None,
    ) -> Float[Tensor, "*batch seq d_model"]:
        owner = "MultiHeadSelfAttention"
        check_last_dim(owner, "x", x, self.d_model)
        check_min_ndim(owner, "x", x, 2, "(..., seq, d_model)")
        seq_len = x.shape[-2]

        split_heads = "... seq (heads d_k) -> ... heads seq d_k"
        q = rearrange(self.q_proj(x), split_heads, heads=self.num_heads)
        k = rearrange(self.k_proj(x), split_heads, heads=self.num_heads)
        v = rearrange(self.v_proj(x), split_heads, heads=self.num_heads)

        if self.rope is not None:
            if token_positions is not None:
                check_integer_tensor(owner, "token_positions", token_positions)
                check_broadcastable_to(
                    owner, "token_positions", token_positions, x.shape[:-1], "(..., seq)"
                )
                if token_positions.ndim > 0:
                    # (..., seq) -> (..., 1, seq): the same positions for every head.
                    token_positions = token_positions.unsqueeze(-2)
            q = self.rope(q, token_positions)
            k = self.rope(k, token_positions)

        causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=x.device).tril()
        dropout_p = self.attn_dropout if self.training else 0.0
        # A block of queries at a time: queries [start, end) see keys [0, end) only, so the
        # scores above the diagonal blocks, which the mask would zero anyway, are never
        # computed (a quarter of them at 256 positions, 44% at 1024). Each block is plain
        # attention over its rows.
        blocks = [
            scaled_dot_product_attention(
                q[..., start:end, :],
                k[..., :end, :],
                v[..., :end, :],
                mask=causal[start:end, :end],
                dropout_p=dropout_p,
            )
            for start, end in _query_blocks(seq_len)
        ]
        out = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=-2)
        return self.output_proj(rearrange(out, "... heads seq d_v -> ... seq (heads d_v)"))

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, num_heads={self.num_heads}, "
            f"rope={self.rope is not None}, attn_dropout={self.attn_dropout}"
        )


def _query_blocks(seq_len: int) -> list[tuple[int, int]]:
    """``(start, end)`` of equal blocks of at most ``QUERY_BLOCK`` positions covering the
    sequence (one block up to ``QUERY_BLOCK``)."""
    count = -(-seq_len // QUERY_BLOCK)
    bounds = [round(i * seq_len / count) for i in range(count + 1)]
    return list(itertools.pairwise(bounds))
