"""Backward cases: for each differentiable family, the gradients its inputs must receive.

A case stores the forward's arguments, a fixed random `grad_projection` shaped like the
output, and `expected_grad.<name>`: the oracle's gradient of
``sum(grad_projection * output)`` with respect to the float argument or the weight of that
name (weights by their SPEC names, `weight`, `w1.weight`, `attn.q_proj.weight`). Its params carry
``"backward": true``, so only the family's `test_<family>_backward` runs on it (the plugin's
``cases="backward"``). The cases are small: their point is that an implementation which
detaches, uses ``.data``, computes under ``no_grad`` or goes through NumPy has an output that
no gradient flows back through, or flows back wrong, and any size shows that.

The weights' gradients are those of the parameters an adapter builds around them (it may
copy them into a module with ``load_state_dict``, or use them as they are): a Linear that
computes with ``weight.data``, or a norm with a detached gain, gives the right output and
the right input gradient, and no gradient to its weight. Before a gradient is stored,
`check_gradients` compares it with a central difference of the forward oracle along a
random direction, and the generation stops if they disagree.
"""

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
