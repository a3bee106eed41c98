"""Bias-free linear layer."""

from __future__ import annotations

import math

import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics._checks import check_last_dim, check_positive_int


class Linear(nn.Module):
    """``y = x Wᵀ`` with ``weight`` of shape ``(out_features, in_features)`` and no bias.

    The weight is stored ``(out, in)`` like ``torch.nn.Linear`` so that state dicts line
    up; it is drawn from a truncated normal with variance 2 / (in + out), cut at ±3 std.

    Input ``(..., in_features)``, output ``(..., out_features)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
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
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw ``weight`` from the truncated normal of the spec."""
        std = math.sqrt(2.0 / (self.in_features + self.out_features))
        nn.init.trunc_normal_(self.weight, mean=0.0, std=std, a=-3.0 * std, b=3.0 * std)

    def forward(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_out"]:
        check_last_dim("Linear", "x", x, self.in_features)
        return x @ self.weight.T

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias=False"
