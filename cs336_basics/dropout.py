"""Dropout: zero a random fraction p of activations in training, scale the rest by 1/(1-p)."""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics._checks import check_dropout_rate


def dropout(x: Float[Tensor, " *shape"], p: float) -> Float[Tensor, " *shape"]:
    """Each element kept with probability ``1 - p`` and scaled by ``1 / (1 - p)``, else 0.

    The scaling keeps every element's expectation, so the evaluation-mode model (no dropout)
    needs no rescaling. ``p = 0`` returns ``x`` itself and draws no random numbers, so a
    dropout-free configuration leaves the global RNG untouched. The keep mask is drawn in
    float32 whatever ``x``'s dtype: a bf16 uniform has too few values to hit ``p`` closely.
    """
    check_dropout_rate("dropout", "p", p)
    if p == 0.0:
        return x
    keep = torch.rand(x.shape, device=x.device) >= p
    return torch.where(keep, x * (1.0 / (1.0 - p)), 0.0)


class Dropout(nn.Module):
    """:func:`dropout` with rate ``p`` in training mode, the identity in evaluation mode."""

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        check_dropout_rate("Dropout", "p", p)
        self.p = float(p)

    def forward(self, x: Float[Tensor, " *shape"]) -> Float[Tensor, " *shape"]:
        return dropout(x, self.p if self.training else 0.0)

    def extra_repr(self) -> str:
        return f"p={self.p}"
