"""Float64 reference math for the position-independent building blocks.

Every function converts its array inputs to float64 and returns float64, so that expected
outputs carry no rounding of their own worth speaking of. Shapes use ``...`` for any number
of leading dimensions. Each function's ``*_backward`` follows it (conventions: `gradients`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cs336_staff.oracle.gradients import Grads, prefixed, rows

__all__ = [
    "embedding",
    "embedding_backward",
    "feedforward",
    "feedforward_backward",
    "gelu",
    "gelu_backward",
    "layernorm",
    "layernorm_backward",
    "linear",
    "linear_backward",
    "rmsnorm",
    "rmsnorm_backward",
    "silu",
    "silu_backward",
    "softmax",
    "softmax_backward",
    "swiglu",
    "swiglu_backward",
]

Array = NDArray[np.float64]

_GELU_APPROXIMATIONS = ("none", "tanh")
_FFN_ACTIVATIONS = ("gelu", "silu")


def f64(x: ArrayLike) -> Array:
    """`x` as a float64 array (a copy only where its dtype differs)."""
    return np.asarray(x, dtype=np.float64)


def _f64_or_none(x: ArrayLike | None) -> Array | None:
    return None if x is None else f64(x)


def linear(x: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None) -> Array:
    """Affine map ``x @ weight.T (+ bias)``.

    Args:
        x: ``(..., in)``.
        weight: ``(out, in)``, the PyTorch layout.
        bias: ``(out,)`` or None.

    Returns:
        ``(..., out)``.
    """
    x, weight = f64(x), f64(weight)
    if weight.ndim != 2 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: x {x.shape} does not fit weight {weight.shape} (out, in)")
    y = x @ weight.T
    if bias is not None:
        y = y + f64(bias)
    return y


def linear_backward(
    x: ArrayLike, weight: ArrayLike, d_out: ArrayLike, bias: ArrayLike | None = None
) -> Grads:
    """Of ``y = x @ weight.T (+ bias)``: ``x (..., in)``, ``weight (out, in)``,
    ``d_out (..., out)``. Returns ``x``, ``weight`` and, with a bias, ``bias``."""
    x, weight, d_out = f64(x), f64(weight), f64(d_out)
    # As 2-D products: NumPy's stacked matmul does not reach the BLAS (100 times slower).
    d_x = (rows(d_out) @ weight).reshape(*d_out.shape[:-1], weight.shape[1])
    grads = {"x": d_x, "weight": rows(d_out).T @ rows(x)}
    if bias is not None:
        grads["bias"] = rows(d_out).sum(axis=0)
    return grads


def embedding(weight: ArrayLike, ids: ArrayLike) -> Array:
    """Row lookup ``weight[ids]``.

    Args:
        weight: ``(vocab, d_model)``.
        ids: integer array of any shape ``(...)``, each in ``[0, vocab)``.

    Returns:
        ``(..., d_model)``.
    """
    weight = f64(weight)
    ids = np.asarray(ids)
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"embedding: ids must be integers, got {ids.dtype}")
    # NumPy would silently wrap negative ids around to the end of the table.
    if ids.size and (ids.min() < 0 or ids.max() >= weight.shape[0]):
        raise ValueError(f"embedding: ids must lie in [0, {weight.shape[0]})")
    return weight[ids]


def embedding_backward(weight: ArrayLike, ids: ArrayLike, d_out: ArrayLike) -> Grads:
    """Of ``weight[ids]``: ``weight (vocab, d_model)``, ``d_out (..., d_model)``. Returns
    ``weight`` only: a repeated id gets the sum of its rows' gradients."""
    weight, ids, d_out = f64(weight), np.asarray(ids), f64(d_out)
    grad = np.zeros_like(weight)
    np.add.at(grad, ids.reshape(-1), rows(d_out))
    return {"weight": grad}


def rmsnorm(x: ArrayLike, weight: ArrayLike, eps: float = 1e-5) -> Array:
    """RMSNorm ``x / sqrt(mean(x**2, last dim) + eps) * weight``.

    Args:
        x: ``(..., d_model)``.
        weight: ``(d_model,)`` gain.
        eps: added to the mean square before the square root.

    Returns:
        ``(..., d_model)``.
    """
    x, weight = f64(x), f64(weight)
    rms = np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)
    return x / rms * weight


def rmsnorm_backward(x: ArrayLike, weight: ArrayLike, d_out: ArrayLike, eps: float = 1e-5) -> Grads:
    """Of ``x / rms(x) * weight``, ``rms = sqrt(mean(x²) + eps)``, over the last dim.
    Returns ``x`` and ``weight``.

    The normaliser depends on ``x`` too: besides ``weight * d_out / rms`` the input gradient
    has the term ``-x̂ · mean(x̂ · weight · d_out) / rms`` (``x̂ = x / rms``), the one a
    normaliser detached from the graph loses.
    """
    x, weight, d_out = f64(x), f64(weight), f64(d_out)
    inv_rms = 1.0 / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)
    x_hat = x * inv_rms
    d_hat = d_out * weight
    d_x = inv_rms * (d_hat - x_hat * np.mean(d_hat * x_hat, axis=-1, keepdims=True))
    return {"x": d_x, "weight": rows(d_out * x_hat).sum(axis=0)}


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
    x, weight = f64(x), f64(weight)
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * weight
    if bias is not None:
        y = y + f64(bias)
    return y


def layernorm_backward(
    x: ArrayLike,
    weight: ArrayLike,
    bias: ArrayLike | None,
    d_out: ArrayLike,
    eps: float = 1e-5,
) -> Grads:
    """Of ``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dim (biased
    variance). Returns ``x``, ``weight`` and, with a bias, ``bias``."""
    x, weight, d_out = f64(x), f64(weight), f64(d_out)
    centred = x - np.mean(x, axis=-1, keepdims=True)
    inv_std = 1.0 / np.sqrt(np.mean(centred**2, axis=-1, keepdims=True) + eps)
    x_hat = centred * inv_std
    d_hat = d_out * weight
    d_x = inv_std * (
        d_hat
        - np.mean(d_hat, axis=-1, keepdims=True)
        - x_hat * np.mean(d_hat * x_hat, axis=-1, keepdims=True)
    )
    grads = {"x": d_x, "weight": rows(d_out * x_hat).sum(axis=0)}
    if bias is not None:
        grads["bias"] = rows(d_out).sum(axis=0)
    return grads


def _sigmoid(x: Array) -> Array:
    # exp(-|x|) never overflows, so neither branch produces inf for large |x|.
    z = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))


def silu(x: ArrayLike) -> Array:
    """SiLU ``x * sigmoid(x)``, elementwise; any shape."""
    x = f64(x)
    return x * _sigmoid(x)


def silu_backward(x: ArrayLike, d_out: ArrayLike) -> Grads:
    """Of ``x * sigmoid(x)``, elementwise: ``sigmoid(x) (1 + x (1 - sigmoid(x)))``."""
    x, d_out = f64(x), f64(d_out)
    # The tanh form of the sigmoid cannot overflow for any x.
    s = 0.5 * (1.0 + np.tanh(0.5 * x))
    return {"x": d_out * s * (1.0 + x * (1.0 - s))}


_erf = np.vectorize(math.erf, otypes=[np.float64])
_TANH_SCALE = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715


def gelu(x: ArrayLike, approximate: str = "none") -> Array:
    """GELU, elementwise; any shape.

    Args:
        x: any shape.
        approximate: ``"none"`` for the exact ``0.5 x (1 + erf(x / sqrt 2))``, ``"tanh"`` for
            ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))`` (GPT-2's form).

    Returns:
        same shape as ``x``.
    """
    x = f64(x)
    if approximate == "none":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if approximate == "tanh":
        inner = _TANH_SCALE * (x + _TANH_CUBIC * x**3)
        return 0.5 * x * (1.0 + np.tanh(inner))
    raise ValueError(
        f"gelu: approximate must be one of {_GELU_APPROXIMATIONS}, got {approximate!r}"
    )


def gelu_backward(x: ArrayLike, d_out: ArrayLike, approximate: str = "none") -> Grads:
    """Of GELU, elementwise: ``Φ(x) + x φ(x)`` exactly, or the derivative of GPT-2's tanh
    form ``0.5 x (1 + tanh(c (x + 0.044715 x³)))``, ``c = sqrt(2/π)``."""
    x, d_out = f64(x), f64(d_out)
    if approximate == "none":
        cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
        pdf = np.exp(-0.5 * x**2) / math.sqrt(2.0 * math.pi)
        return {"x": d_out * (cdf + x * pdf)}
    if approximate == "tanh":
        t = np.tanh(_TANH_SCALE * (x + _TANH_CUBIC * x**3))
        inner = _TANH_SCALE * (1.0 + 3.0 * _TANH_CUBIC * x**2)
        return {"x": d_out * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t**2) * inner)}
    raise ValueError(
        f"gelu_backward: approximate must be one of {_GELU_APPROXIMATIONS}, got {approximate!r}"
    )


def softmax(x: ArrayLike, dim: int) -> Array:
    """Softmax along ``dim``; any shape.

    The maximum is subtracted first, so large inputs (``x + 1e4``) give the same result as
    ``x`` instead of overflowing.
    """
    x = f64(x)
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


def softmax_backward(x: ArrayLike, dim: int, d_out: ArrayLike) -> Grads:
    """Of ``softmax(x, dim)``: ``p (d_out - sum(p d_out, dim))``."""
    p, d_out = softmax(x, dim), f64(d_out)
    return {"x": p * (d_out - np.sum(p * d_out, axis=dim, keepdims=True))}


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


def swiglu_backward(
    x: ArrayLike,
    w1: ArrayLike,
    w2: ArrayLike,
    w3: ArrayLike,
    d_out: ArrayLike,
    b1: ArrayLike | None = None,
    b2: ArrayLike | None = None,
    b3: ArrayLike | None = None,
) -> Grads:
    """Of ``w2(silu(w1 x) * w3 x)`` (shapes as ``swiglu``). Returns ``x``, ``w1.weight``,
    ``w2.weight``, ``w3.weight`` and the ``w*.bias`` given."""
    x = f64(x)
    gate_in, value = linear(x, w1, b1), linear(x, w3, b3)
    gate = silu(gate_in)
    out = linear_backward(gate * value, w2, d_out, b2)
    into_gate = silu_backward(gate_in, out["x"] * value)["x"]
    first = linear_backward(x, w1, into_gate, b1)
    third = linear_backward(x, w3, out["x"] * gate, b3)
    return (
        {"x": first["x"] + third["x"]}
        | prefixed(first, "w1.")
        | prefixed(out, "w2.")
        | prefixed(third, "w3.")
    )


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


def feedforward_backward(
    x: ArrayLike,
    w1: ArrayLike,
    w2: ArrayLike,
    d_out: ArrayLike,
    activation: str = "gelu",
    approximate: str = "none",
    b1: ArrayLike | None = None,
    b2: ArrayLike | None = None,
) -> Grads:
    """Of ``w2(act(w1 x))`` (as ``feedforward``). Returns ``x``, ``w1.weight``,
    ``w2.weight`` and the ``w*.bias`` given."""
    if activation not in _FFN_ACTIVATIONS:
        raise ValueError(
            f"feedforward_backward: activation must be one of {_FFN_ACTIVATIONS}, "
            f"got {activation!r}"
        )
    x = f64(x)
    hidden_in = linear(x, w1, b1)
    if activation == "gelu":
        hidden = gelu(hidden_in, approximate)
        d_hidden = functools.partial(gelu_backward, approximate=approximate)
    else:
        hidden, d_hidden = silu(hidden_in), silu_backward
    out = linear_backward(hidden, w2, d_out, b2)
    d_hidden_in = d_hidden(hidden_in, out["x"])["x"]
    first = linear_backward(x, w1, d_hidden_in, b1)
    return {"x": first["x"]} | prefixed(first, "w1.") | prefixed(out, "w2.")
