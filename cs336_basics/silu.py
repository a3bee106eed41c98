"""SiLU (swish) activation."""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor


def silu(x: Float[Tensor, " *shape"]) -> Float[Tensor, " *shape"]:
    """Elementwise ``x * sigmoid(x)``; same shape and dtype as ``x``.

    ``torch.sigmoid`` saturates cleanly to 0/1, so very negative or very large inputs give
    0 and x instead of NaN (which ``x / (1 + exp(-x))`` would risk via ``inf`` overflow).
    """
    return x * torch.sigmoid(x)
