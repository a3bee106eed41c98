"""Pre-norm Transformer decoder block."""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from cs336_basics.multihead_attention import MultiHeadSelfAttention
from cs336_basics.rmsnorm import RMSNorm
from cs336_basics.swiglu import SwiGLU


class TransformerBlock(nn.Module):
    """``h = x + attn(ln1(x)); out = h + ffn(ln2(h))``: LLaMA-style pre-norm block.

    ``ln1``/``ln2`` are RMSNorm, ``attn`` is causal :class:`MultiHeadSelfAttention` with
    RoPE (``theta=None`` turns RoPE off), ``ffn`` is :class:`SwiGLU` with hidden size
    ``d_ff``. Normalising only the sublayer inputs leaves the residual stream an
    untouched sum, which is what keeps deep stacks trainable without warm-up tricks.

    ``forward(x, token_positions=None)``: ``x (..., seq, d_model)`` → same shape.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        max_seq_len: int,
        theta: float | None,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.ln1 = RMSNorm(d_model, **factory)
        self.attn = MultiHeadSelfAttention(
            d_model, num_heads, max_seq_len=max_seq_len, theta=theta, **factory
        )
        self.ln2 = RMSNorm(d_model, **factory)
        self.ffn = SwiGLU(d_model, d_ff, **factory)

    def forward(
        self,
        x: Float[Tensor, "... seq d_model"],
        token_positions: Int[Tensor, "... seq"] | None = None,
    ) -> Float[Tensor, "... seq d_model"]:
        h = x + self.attn(self.ln1(x), token_positions)
        return h + self.ffn(self.ln2(h))
