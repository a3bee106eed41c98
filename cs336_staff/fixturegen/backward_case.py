"""Backward cases: for each differentiable family, the gradients its inputs and weights must
receive, each checked against finite differences before it is stored (docs/maintaining.md,
"Fixtures and the oracle")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cs336_staff import oracle
from cs336_staff.fixturegen.draws import normal
from cs336_staff.fixturegen.writer import FixtureSet

Forward = Callable[[Mapping[str, np.ndarray]], np.ndarray]
Backward = Callable[[Mapping[str, np.ndarray], np.ndarray], dict[str, np.ndarray]]


def add_backward_case(
    fs: FixtureSet,
    family: str,
    case_id: str,
    description: str,
    params: dict[str, Any],
    differentiable: dict[str, np.ndarray],
    forward: Forward,
    gradients: Backward,
    others: dict[str, np.ndarray] | None = None,
    weights: dict[str, np.ndarray] | None = None,
) -> None:
    """Draw the projection, compute and verify the gradients of `differentiable` (the
    arguments by their adapter names) and of `weights` (by their SPEC names), and store the
    case.

    `forward(values)` and `gradients(values, d_out)` see the differentiable arguments and
    the weights by name; everything else they need (positions, masks) they hold themselves.
    """
    values = differentiable | (weights or {})
    output = forward(values)
    projection = normal(fs.rng(family, case_id, "projection"), *output.shape)
    grads = gradients(values, projection.astype(np.float64))
    if set(grads) != set(values):
        raise ValueError(f"{family}/{case_id}: gradients of {sorted(grads)}, not {sorted(values)}")
    try:
        oracle.check_gradients(forward, values, grads, projection, fs.rng(family, case_id, "check"))
    except oracle.GradientCheckError as error:
        raise oracle.GradientCheckError(f"{family}/{case_id}: {error}") from None
    fs.add(
        family,
        case_id,
        description,
        params | {"backward": True},
        differentiable
        | (others or {})
        | {"grad_projection": projection}
        | {f"expected_grad.{name}": g.astype(np.float32) for name, g in grads.items()},
        None,
        weights,
    )


def adapter_names(grads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """An oracle backward's gradients as `add_backward_case` names them: its input `x` as
    the adapters' `in_features`, its parameters under their SPEC names, as they are."""
    return {("in_features" if name == "x" else name): g for name, g in grads.items()}


def matrices(values: Mapping[str, np.ndarray], *names: str) -> list[np.ndarray]:
    """The weight matrices `<name>.weight`, in the order named."""
    return [values[f"{name}.weight"] for name in names]
