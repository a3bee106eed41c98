"""Mistaken arithmetic reproduced in float64: rounding to half precision, float32's overflow
and underflow."""

from __future__ import annotations

import math

import numpy as np


def round_to_bfloat16(x: np.ndarray) -> np.ndarray:
    """Round to the nearest bfloat16 (ties to even), as float64: via float32, as torch does."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def round_to_float16(a: np.ndarray) -> np.ndarray:
    """Round float64 values as a torch float16 operation does: via float32."""
    return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float64)


FLOAT32_MAX = float(np.finfo(np.float32).max)


# exp(x) rounds to 0 in float32 below the smallest subnormal's half: x < ln(2⁻¹⁵⁰).
FLOAT32_EXP_UNDERFLOW = math.log(2.0**-150)


# exp(x) is a normal float32 above ln(2⁻¹²⁶); below, a subnormal with fewer digits, or 0.
FLOAT32_EXP_SUBNORMAL = math.log(2.0**-126)


def float32_exp(x: np.ndarray) -> np.ndarray:
    """exp in float64, then overflowing and underflowing where float32's would."""
    with np.errstate(over="ignore"):
        e = np.exp(x)
    return np.where(e > FLOAT32_MAX, np.inf, np.where(x < FLOAT32_EXP_UNDERFLOW, 0.0, e))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))
