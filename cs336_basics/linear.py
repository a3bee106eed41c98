"""Linear layer, bias-free unless asked for."""

from __future__ import annotations

import math

import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics._checks import check_last_dim, check_positive_int


class Linear(nn.Module):
    """``y = x Wᵀ (+ b)`` with ``weight`` of shape ``(out_features, in_features)``.

    The weight is stored ``(out, in)`` like ``torch.nn.Linear`` so that state dicts line
    up; it is drawn from a truncated normal with variance 2 / (in + out), cut at ±3 std.
    ``bias=True`` (GPT-2-style models) adds ``bias (out_features,)``, initialised to zeros;
    without it there is no ``bias`` entry at all, so the SPEC's state dicts load unchanged.

    Input ``(..., in_features)``, output ``(..., out_features)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = False,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("Linear", "in_features", in_features)
        check_positive_int("Linear", "out_features", out_features)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(
            torch.empty(out_features, in_features, device=device, dtype=dtype)
        )
        self.bias: nn.Parameter | None = None
        if bias:
            self.bias = nn.Parameter(torch.empty(out_features, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw ``weight`` from the truncated normal of the spec; zero the bias."""
        if self.weight.is_meta:
            # No values to draw, and torch's meta erfinv_ would import torch._dynamo (1 s).
            return
        std = math.sqrt(2.0 / (self.in_features + self.out_features))
        nn.init.trunc_normal_(self.weight, mean=0.0, std=std, a=-3.0 * std, b=3.0 * std)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: Float[Tensor, "*batch d_in"]) -> Float[Tensor, "*batch d_out"]:
        check_last_dim("Linear", "x", x, self.in_features)
        y = x @ self.weight.T
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )
