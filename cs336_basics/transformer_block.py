"""Transformer decoder block: pre-norm (LLaMA, GPT-2) or post-norm (the original Transformer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from cs336_basics.builders import NORM_POSITIONS, make_ffn, make_norm
from cs336_basics.dropout import Dropout
from cs336_basics.multihead_attention import MultiHeadSelfAttention

if TYPE_CHECKING:
    from cs336_basics.config import ModelConfig


class TransformerBlock(nn.Module):
    """Pre-norm ``h = x + attn(ln1(x)); out = h + ffn(ln2(h))`` by default.

    With the defaults this is the SPEC's LLaMA-style block: ``ln1``/``ln2`` RMSNorm, causal
    :class:`MultiHeadSelfAttention` with RoPE (``theta=None`` turns RoPE off), ``ffn``
    :class:`SwiGLU` with hidden size ``d_ff``. Normalising only the sublayer inputs leaves the
    residual stream an untouched sum, which is what keeps deep stacks trainable without
    warm-up tricks. The keyword options are the :class:`ModelConfig` fields of the same names
    (``norm_position="post"`` gives ``h = ln1(x + attn(x)); out = ln2(h + ffn(h))``);
    ``residual_dropout`` applies to each sublayer's output before it joins the residual
    stream. :meth:`from_config` builds the block a config describes.

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
        norm: str = "rmsnorm",
        norm_eps: float = 1e-5,
        norm_position: str = "pre",
        rope_pairing: str = "interleaved",
        ffn: str = "swiglu",
        gelu_approximate: str = "none",
        bias: bool = False,
        attn_dropout: float = 0.0,
        residual_dropout: float = 0.0,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if norm_position not in NORM_POSITIONS:
            raise ValueError(
                f"TransformerBlock: norm_position must be one of {NORM_POSITIONS}, "
                f"got norm_position={norm_position!r}"
            )
        factory = {"device": device, "dtype": dtype}
        self.post_norm = norm_position == "post"
        self.ln1 = make_norm(norm, d_model, norm_eps, **factory)
        self.attn = MultiHeadSelfAttention(
            d_model,
            num_heads,
            max_seq_len=max_seq_len,
            theta=theta,
            rope_pairing=rope_pairing,
            bias=bias,
            attn_dropout=attn_dropout,
            **factory,
        )
        self.ln2 = make_norm(norm, d_model, norm_eps, **factory)
        self.ffn = make_ffn(ffn, d_model, d_ff, gelu_approximate, bias, **factory)
        self.dropout = Dropout(residual_dropout)

    @classmethod
    def from_config(
        cls,
        config: ModelConfig,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> TransformerBlock:
        """The block of ``config``: RoPE (with ``rope_theta``) only if ``positions="rope"``."""
        return cls(
            config.d_model,
            config.num_heads,
            config.d_ff,
            config.context_length,
            config.rope_theta if config.positions == "rope" else None,
            norm=config.norm,
            norm_eps=config.norm_eps,
            norm_position=config.norm_position,
            rope_pairing=config.rope_pairing,
            ffn=config.ffn,
            gelu_approximate=config.gelu_approximate,
            bias=config.bias,
            attn_dropout=config.attn_dropout,
            residual_dropout=config.residual_dropout,
            device=device,
            dtype=dtype,
        )

    def forward(
        self,
        x: Float[Tensor, "*batch seq d_model"],
        token_positions: Int[Tensor, "... seq"] | None = None,
    ) -> Float[Tensor, "*batch seq d_model"]:
        if self.post_norm:
            h = self.ln1(x + self.dropout(self.attn(x, token_positions)))
            return self.ln2(h + self.dropout(self.ffn(h)))
        h = x + self.dropout(self.attn(self.ln1(x), token_positions))
        return h + self.dropout(self.ffn(self.ln2(h)))
