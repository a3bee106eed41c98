"""Inputs drawn for the cases: float32 normal draws, and their copies in another dtype.

Every family's generator draws its inputs here, so a stored case and a fresh draw of it
come from the same two functions (the weights, drawn to expose bugs, are in `weights`).
"""

from __future__ import annotations

import numpy as np
import torch


def normal(rng: np.random.Generator, *shape: int, std: float = 1.0) -> np.ndarray:
    """N(0, std²) values of `shape` in float32."""
    return (std * rng.standard_normal(shape)).astype(np.float32)


def in_dtype(x: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """`x` rounded to `dtype` (half precision) as torch rounds it, kept as a tensor since
    NumPy has no bfloat16."""
    return torch.from_numpy(x).to(dtype)
