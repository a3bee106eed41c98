"""Float64 reference math for the position-independent building blocks.

Every function converts its array inputs to float64 and returns float64, so that expected
outputs carry no rounding of their own worth speaking of. Shapes use ``...`` for any number
of leading dimensions.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]

_GELU_APPROXIMATIONS = ("none", "tanh")
_FFN_ACTIVATIONS = ("gelu", "silu")


def _f64(x: ArrayLike) -> Array:
    return np.asarray(x, dtype=np.float64)


def _f64_or_none(x: ArrayLike | None) -> Array | None:
    return None if x is None else _f64(x)


def linear(x: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None) -> Array:
    """Affine map ``x @ weight.T (+ bias)``.

    Args:
        x: ``(..., in)``.
        weight: ``(out, in)``, the PyTorch layout.
        bias: ``(out,)`` or None.

    Returns:
        ``(..., out)``.
    """
    x, weight = _f64(x), _f64(weight)
    if weight.ndim != 2 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: x {x.shape} does not fit weight {weight.shape} (out, in)")
    y = x @ weight.T
    if bias is not None:
        y = y + _f64(bias)
    return y


def embedding(weight: ArrayLike, ids: ArrayLike) -> Array:
    """Row lookup ``weight[ids]``.

    Args:
        weight: ``(vocab, d_model)``.
        ids: integer array of any shape ``(...)``, each in ``[0, vocab)``.

    Returns:
        ``(..., d_model)``.
    """
    weight = _f64(weight)
    ids = np.asarray(ids)
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"embedding: ids must be integers, got {ids.dtype}")
    # NumPy would silently wrap negative ids around to the end of the table.
    if ids.size and (ids.min() < 0 or ids.max() >= weight.shape[0]):
        raise ValueError(f"embedding: ids must lie in [0, {weight.shape[0]})")
    return weight[ids]


def rmsnorm(x: ArrayLike, weight: ArrayLike, eps: float = 1e-5) -> Array:
    """RMSNorm ``x / sqrt(mean(x**2, last dim) + eps) * weight``.

    Args:
        x: ``(..., d_model)``.
        weight: ``(d_model,)`` gain.
        eps: added to the mean square before the square root.

    Returns:
        ``(..., d_model)``.
    """
    x, weight = _f64(x), _f64(weight)
    rms = np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)
    return x / rms * weight


def layernorm(x: ArrayLike, weight: ArrayLike, bias: ArrayLike | None, eps: float = 1e-5) -> Array:
    """LayerNorm ``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dimension.

    The variance is the biased one (divides by ``d_model``), as ``torch.nn.LayerNorm`` uses.

    Args:
        x: ``(..., d_model)``.
        weight: ``(d_model,)`` gain.
        bias: ``(d_model,)`` shift, or None for a bias-free LayerNorm.
        eps: added to the variance before the square root.

    Returns:
        ``(..., d_model)``.
    """
    x, weight = _f64(x), _f64(weight)
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * weight
    if bias is not None:
        y = y + _f64(bias)
    return y


def _sigmoid(x: Array) -> Array:
    # exp(-|x|) never overflows, so neither branch produces inf for large |x|.
    z = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))


def silu(x: ArrayLike) -> Array:
    """SiLU ``x * sigmoid(x)``, elementwise; any shape."""
    x = _f64(x)
    return x * _sigmoid(x)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x: ArrayLike, approximate: str = "none") -> Array:
    """GELU, elementwise; any shape.

    Args:
        x: any shape.
        approximate: ``"none"`` for the exact ``0.5 x (1 + erf(x / sqrt 2))``, ``"tanh"`` for
            ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))`` (GPT-2's form).

    Returns:
        same shape as ``x``.
    """
    x = _f64(x)
    if approximate == "none":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1.0 + np.tanh(inner))
    raise ValueError(
        f"gelu: approximate must be one of {_GELU_APPROXIMATIONS}, got {approximate!r}"
    )


def softmax(x: ArrayLike, dim: int) -> Array:
    """Softmax along ``dim``; any shape.

    The maximum is subtracted first, so large inputs (``x + 1e4``) give the same result as
    ``x`` instead of overflowing.
    """
    x = _f64(x)
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


def swiglu(
    x: ArrayLike,
    w1: ArrayLike,
    w2: ArrayLike,
    w3: ArrayLike,
    b1: ArrayLike | None = None,
    b2: ArrayLike | None = None,
    b3: ArrayLike | None = None,
) -> Array:
    """SwiGLU feed-forward ``w2(silu(w1 x) * w3 x)``.

    Args:
        x: ``(..., d_model)``.
        w1: ``(d_ff, d_model)``, gate projection.
        w2: ``(d_model, d_ff)``, output projection.
        w3: ``(d_ff, d_model)``, value projection.
        b1, b2, b3: optional biases of the matching output sizes.

    Returns:
        ``(..., d_model)``.
    """
    gate = silu(linear(x, w1, _f64_or_none(b1)))
    value = linear(x, w3, _f64_or_none(b3))
    return linear(gate * value, w2, _f64_or_none(b2))


def feedforward(
    x: ArrayLike,
    w1: ArrayLike,
    w2: ArrayLike,
    activation: str = "gelu",
    approximate: str = "none",
    b1: ArrayLike | None = None,
    b2: ArrayLike | None = None,
) -> Array:
    """Two-matrix feed-forward ``w2(act(w1 x))``.

    Args:
        x: ``(..., d_model)``.
        w1: ``(d_ff, d_model)``.
        w2: ``(d_model, d_ff)``.
        activation: ``"gelu"`` or ``"silu"``.
        approximate: GELU form, ``"none"`` or ``"tanh"``; ignored for SiLU.
        b1, b2: optional biases ``(d_ff,)`` and ``(d_model,)``.

    Returns:
        ``(..., d_model)``.
    """
    hidden = linear(x, w1, _f64_or_none(b1))
    if activation == "gelu":
        hidden = gelu(hidden, approximate=approximate)
    elif activation == "silu":
        hidden = silu(hidden)
    else:
        raise ValueError(
            f"feedforward: activation must be one of {_FFN_ACTIVATIONS}, got {activation!r}"
        )
    return linear(hidden, w2, _f64_or_none(b2))
