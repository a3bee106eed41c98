"""Argument checks shared by the modules.

Every check raises with a message that names the component, the argument, the value it
got and the rule it broke, so a shape mistake deep inside a model reads like a sentence.
"""

from __future__ import annotations

import torch
from torch import Tensor


def check_positive_int(owner: str, name: str, value: object) -> None:
    """Raise unless ``value`` is a (non-bool) int greater than zero."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {name} must be an int, got {name}={value!r}")
    if value <= 0:
        raise ValueError(f"{owner}: {name} must be positive, got {name}={value}")


def check_dropout_rate(owner: str, name: str, value: object) -> None:
    """Raise unless ``value`` is a (non-bool) number in ``[0, 1)``; 1 would divide by zero."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{owner}: {name} must be a number, got {name}={value!r}")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{owner}: {name} must be in [0, 1), got {name}={value}")


def check_last_dim(owner: str, name: str, x: Tensor, expected: int) -> None:
    """Raise unless ``x`` has at least one dimension and its last one equals ``expected``."""
    if x.ndim == 0 or x.shape[-1] != expected:
        raise ValueError(
            f"{owner}: last dimension of {name} must be {expected}, "
            f"got {name}.shape={tuple(x.shape)}"
        )


def check_min_ndim(owner: str, name: str, x: Tensor, ndim: int, layout: str) -> None:
    """Raise unless ``x`` has at least ``ndim`` dimensions (``layout`` names them)."""
    if x.ndim < ndim:
        raise ValueError(
            f"{owner}: {name} must have shape {layout} (at least {ndim} dims), "
            f"got {name}.shape={tuple(x.shape)}"
        )


def check_integer_tensor(owner: str, name: str, t: Tensor) -> None:
    """Raise unless ``t`` is a tensor of an integer dtype (bool does not count)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{owner}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise TypeError(f"{owner}: {name} must have an integer dtype, got {name}.dtype={t.dtype}")


def check_index_range(owner: str, name: str, t: Tensor, high: int) -> None:
    """Raise IndexError unless every entry of ``t`` lies in ``[0, high)``.

    One min/max reduction and a single host sync. (No ``torch.compiler.is_compiling()`` guard:
    that call imports torch._dynamo and sympy, 3 s on first use; under compile this branch
    merely causes a graph break.)
    """
    if t.numel() == 0:
        return
    lo, hi = torch.stack(torch.aminmax(t)).tolist()
    if lo < 0 or hi >= high:
        bad = lo if lo < 0 else hi
        raise IndexError(
            f"{owner}: every entry of {name} must be in [0, {high}), found {name} value {bad}"
        )


def check_broadcastable_to(
    owner: str, name: str, t: Tensor, shape: torch.Size, layout: str
) -> None:
    """Raise unless ``t.shape`` broadcasts to exactly ``shape`` (no dim of ``shape`` grows).

    Written out rather than via ``torch.broadcast_shapes``, whose first call imports
    torch._refs and sympy (3 s) for a rule this small.
    """
    fits = t.dim() <= len(shape) and all(
        have in (1, want) for have, want in zip(reversed(t.shape), reversed(shape), strict=False)
    )
    if not fits:
        raise ValueError(
            f"{owner}: {name}.shape={tuple(t.shape)} must broadcast to {tuple(shape)} {layout}"
        )
