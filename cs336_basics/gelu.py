"""GELU activation, exact or with GPT-2's tanh approximation."""

from __future__ import annotations

import math

import torch
from jaxtyping import Float
from torch import Tensor

GELU_APPROXIMATIONS = ("none", "tanh")


def gelu(x: Float[Tensor, " *shape"], approximate: str = "none") -> Float[Tensor, " *shape"]:
    """Elementwise ``x · Φ(x)``; same shape and dtype as ``x``.

    ``approximate="none"`` is exact, ``0.5 x (1 + erf(x / √2))``; ``"tanh"`` is the form
    GPT-2 was trained with, ``0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))``. They differ by
    up to 5e-4 (near |x| = 2.7), so a model must use the one its weights were trained with.
    """
    if approximate == "none":
        return 0.5 * x * (1.0 + torch.erf(x * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))
        return 0.5 * x * (1.0 + torch.tanh(inner))
    raise ValueError(f"gelu: approximate must be one of {GELU_APPROXIMATIONS}, got {approximate!r}")
