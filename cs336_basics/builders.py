"""The norm and feed-forward module that an architecture option names, chosen in one place."""

from __future__ import annotations

import torch
from torch import nn

from cs336_basics.feedforward import PositionwiseFeedForward
from cs336_basics.layernorm import LayerNorm
from cs336_basics.rmsnorm import RMSNorm
from cs336_basics.swiglu import SwiGLU

NORMS = ("rmsnorm", "layernorm", "none")
FFNS = ("swiglu", "silu", "gelu")
# Where a block puts its norms: on each sublayer's input, or after each residual sum.
NORM_POSITIONS = ("pre", "post")


def make_norm(
    norm: str,
    d_model: int,
    eps: float = 1e-5,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Module:
    """``RMSNorm``, ``LayerNorm``, or for ``"none"`` a parameter-free identity.

    The identity keeps the model's code one path: a block calls ``ln1`` whether or not it
    normalises, and a no-norm model's state dict simply has no ``ln*`` entries. It is an
    empty ``nn.Sequential``, a container the assignment allows, where ``nn.Identity`` is a
    layer of ``torch.nn`` it does not.
    """
    factory = {"device": device, "dtype": dtype}
    if norm == "rmsnorm":
        return RMSNorm(d_model, eps, **factory)
    if norm == "layernorm":
        return LayerNorm(d_model, eps, **factory)
    if norm == "none":
        return nn.Sequential()
    raise ValueError(f"norm must be one of {NORMS}, got norm={norm!r}")


def make_ffn(
    ffn: str,
    d_model: int,
    d_ff: int,
    gelu_approximate: str = "none",
    bias: bool = False,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Module:
    """``SwiGLU`` (three matrices) or the two-matrix ``w2(act(w1 x))`` with SiLU or GELU."""
    factory = {"device": device, "dtype": dtype}
    if ffn == "swiglu":
        return SwiGLU(d_model, d_ff, bias, **factory)
    if ffn in ("silu", "gelu"):
        return PositionwiseFeedForward(d_model, d_ff, ffn, gelu_approximate, bias, **factory)
    raise ValueError(f"ffn must be one of {FFNS}, got ffn={ffn!r}")
