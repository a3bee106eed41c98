"""The oracle's gradients: the convention its ``*_backward`` functions follow, the bookkeeping
they share, and `check_gradients`, the finite-difference check that proves each formula
(docs/maintaining.md, "Fixtures and the oracle")."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["GradientCheckError", "check_gradients"]

Array = NDArray[np.float64]
Grads = dict[str, Array]


def _f64(x: ArrayLike) -> Array:
    return np.asarray(x, dtype=np.float64)


def prefixed(grads: Mapping[str, Array], prefix: str) -> Grads:
    """The parameter gradients of a sub-component under its name in the parent; not "x"."""
    return {f"{prefix}{name}": g for name, g in grads.items() if name != "x"}


def unbroadcast(grad: Array, shape: tuple[int, ...]) -> Array:
    """Sum `grad` over the axes along which an input of `shape` was broadcast to it."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra > 0 else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def rows(t: Array) -> Array:
    """``(..., n)`` as ``(rows, n)``: parameter gradients sum over every leading position."""
    return t.reshape(-1, t.shape[-1])


# Central differences in float64 with a step of 1e-5 (times the input's scale): the
# truncation error, step² times a third derivative, and the rounding, 1e-16 · |f| / step, are
# both near 1e-10 relative, while a wrong formula is off by far more than FD_RTOL.
FD_STEP = 1e-5
FD_RTOL = 1e-6


class GradientCheckError(AssertionError):
    """An analytic gradient disagrees with the finite difference of the forward."""


def check_gradients(
    forward: Callable[[Mapping[str, Array]], Array],
    inputs: Mapping[str, ArrayLike],
    grads: Mapping[str, ArrayLike],
    d_out: ArrayLike,
    rng: np.random.Generator,
    directions: int = 1,
) -> None:
    """Raise `GradientCheckError` unless every gradient in `grads` is the derivative of
    ``sum(d_out * forward(inputs))`` with respect to the input of the same name.

    Along each of `directions` random unit directions ``v`` per input, the central difference
    ``(f(x + h v) - f(x - h v)) / 2h`` must equal ``<grad, v>`` within ``FD_RTOL · ‖grad‖``
    (plus the difference's own rounding): two forward passes per direction, so cheap enough
    for the generator to run on every gradient it stores.
    """
    values = {name: _f64(value) for name, value in inputs.items()}
    d_out = _f64(d_out)

    def objective(name: str, value: Array) -> float:
        return float(np.sum(d_out * forward(values | {name: value})))

    for name, grad in grads.items():
        grad, base = _f64(grad), values[name]
        if grad.shape != base.shape:
            raise GradientCheckError(f"gradient wrt {name}: shape {grad.shape}, not {base.shape}")
        step = FD_STEP * max(1.0, float(np.abs(base).max(initial=0.0)))
        for _ in range(directions):
            v = rng.standard_normal(base.shape)
            v /= np.linalg.norm(v)
            plus, minus = objective(name, base + step * v), objective(name, base - step * v)
            numeric, analytic = (plus - minus) / (2 * step), float(np.sum(grad * v))
            rounding = 1e-12 * (abs(plus) + abs(minus)) / step
            allowed = FD_RTOL * float(np.linalg.norm(grad)) + rounding
            if not abs(numeric - analytic) <= allowed:
                raise GradientCheckError(
                    f"gradient wrt {name}: <grad, v> = {analytic:.10g}, but the central "
                    f"difference is {numeric:.10g} (allowed difference {allowed:.2g})"
                )
