"""Two-matrix position-wise feed-forward network (the GPT-2 MLP, or its SiLU variant)."""

from __future__ import annotations

from functools import partial

import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics._checks import check_last_dim, check_positive_int
from cs336_basics.gelu import GELU_APPROXIMATIONS, gelu
from cs336_basics.linear import Linear
from cs336_basics.silu import silu

FFN_ACTIVATIONS = ("gelu", "silu")


class PositionwiseFeedForward(nn.Module):
    """``w2(act(w1 x))``, input and output ``(..., d_model)``.

    ``w1`` is ``Linear(d_model, d_ff)`` and ``w2`` is ``Linear(d_ff, d_model)``, with biases
    when ``bias=True``. ``activation`` is ``"gelu"`` (exact, or GPT-2's tanh form with
    ``approximate="tanh"``) or ``"silu"`` (the "SiLU instead of SwiGLU" ablation). Unlike
    :class:`~cs336_basics.SwiGLU` there is no gate, so ``d_ff`` has no default: the usual
    choice is ``4 · d_model``.
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        activation: str = "gelu",
        approximate: str = "none",
        bias: bool = False,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        owner = "PositionwiseFeedForward"
        check_positive_int(owner, "d_model", d_model)
        check_positive_int(owner, "d_ff", d_ff)
        if activation not in FFN_ACTIVATIONS:
            raise ValueError(
                f"{owner}: activation must be one of {FFN_ACTIVATIONS}, got {activation!r}"
            )
        if approximate not in GELU_APPROXIMATIONS:
            raise ValueError(
                f"{owner}: approximate must be one of {GELU_APPROXIMATIONS}, got {approximate!r}"
            )
        self.d_model = d_model
        self.d_ff = d_ff
        self.activation = activation
        self.approximate = approximate
        self.w1 = Linear(d_model, d_ff, bias, device=device, dtype=dtype)
        self.w2 = Linear(d_ff, d_model, bias, device=device, dtype=dtype)
        # Chosen once here, so forward is a single expression whatever the variant.
        self.act = partial(gelu, approximate=approximate) if activation == "gelu" else silu

    def forward(self, x: Float[Tensor, "*batch d_model"]) -> Float[Tensor, "*batch d_model"]:
        check_last_dim("PositionwiseFeedForward", "x", x, self.d_model)
        return self.w2(self.act(self.w1(x)))

    def extra_repr(self) -> str:
        act = f"gelu(approximate={self.approximate!r})" if self.activation == "gelu" else "silu"
        return f"d_model={self.d_model}, d_ff={self.d_ff}, activation={act}"
