"""SwiGLU position-wise feed-forward network."""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics._checks import check_last_dim, check_positive_int
from cs336_basics.linear import Linear
from cs336_basics.silu import silu


def default_d_ff(d_model: int) -> int:
    """``8/3 · d_model`` rounded up to a multiple of 64 (e.g. 64 → 192, 768 → 2048).

    8/3 keeps the three-matrix SwiGLU at the parameter count of a 4·d_model two-matrix
    MLP; the multiple of 64 keeps matmul shapes friendly to GPU kernels. Integer
    arithmetic avoids float rounding at exact multiples.
    """
    check_positive_int("default_d_ff", "d_model", d_model)
    return -(-8 * d_model // (3 * 64)) * 64


class SwiGLU(nn.Module):
    """``w2(silu(w1 x) ⊙ w3 x)``: a gated FFN, input and output ``(..., d_model)``.

    ``w1``/``w3`` are ``Linear(d_model, d_ff)`` (gate and value), ``w2`` is
    ``Linear(d_ff, d_model)``; they have biases only with ``bias=True``. ``d_ff=None`` uses
    :func:`default_d_ff`.
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int | None = None,
        bias: bool = False,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("SwiGLU", "d_model", d_model)
        if d_ff is None:
            d_ff = default_d_ff(d_model)
        check_positive_int("SwiGLU", "d_ff", d_ff)
        self.d_model = d_model
        self.d_ff = d_ff
        self.w1 = Linear(d_model, d_ff, bias, device=device, dtype=dtype)
        self.w2 = Linear(d_ff, d_model, bias, device=device, dtype=dtype)
        self.w3 = Linear(d_model, d_ff, bias, device=device, dtype=dtype)

    def forward(self, x: Float[Tensor, "*batch d_model"]) -> Float[Tensor, "*batch d_model"]:
        check_last_dim("SwiGLU", "x", x, self.d_model)
        return self.w2(silu(self.w1(x)) * self.w3(x))
