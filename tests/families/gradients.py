"""The check every backward test makes: the gradients that reach an adapter's float inputs
and its weights.

A backward case (`cases="backward"`) stores `grad_projection`, shaped like the output, and
`expected_grad.<name>`, the oracle's gradient of ``sum(grad_projection * output)`` with
respect to the argument of that name, or to the weight of that SPEC name (`weight`,
`w1.weight`, `attn.q_proj.weight`). The weights are found among the adapter's arguments as
the case's own weight tensors (passed as they are, or in a dict). The adapter runs beside
the implementation (the probe `input_gradients`, in the sandboxed worker under the
grader); only the gradients come back.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from cs336_harness.adapters import inputs_unchanged
from cs336_harness.adapters.loader import NotImplementedFailure
from cs336_harness.adapters.not_implemented import message
from cs336_harness.adapters.probes import gradients as probes
from cs336_harness.judging.cases import Case
from cs336_harness.judging.compare import assert_matches_oracle

EXPECTED = "expected_grad."


def assert_input_gradients(
    adapters: Any,
    case: Case,
    adapter: str,
    kwargs: dict[str, Any],
    tolerance: dict[str, float],
    positional: int = 0,
) -> None:
    """Fail unless `adapter(**kwargs)` passes back to each argument with an
    `expected_grad.<argument>` in `case`, and to each of the case's weights among the
    arguments with an `expected_grad.<SPEC name>`, that gradient, within `tolerance`. The
    first `positional` arguments go by position, as upstream's tests pass them."""
    __tracebackhide__ = True
    stored = {
        k.removeprefix(EXPECTED): t for k, t in case.tensors.items() if k.startswith(EXPECTED)
    }
    # In the adapter's argument order, so that messages read "Q or K", not "K or Q".
    expected = {name: stored[name] for name in kwargs if name in stored}
    weights = _weights_among(kwargs, case)
    if not expected and not weights:
        raise ValueError(f"{case.id}: no expected gradient for any argument of {adapter}")
    projection = case["grad_projection"]
    result = probes.input_gradients(
        adapters,
        adapter=adapter,
        kwargs=kwargs,
        differentiable=list(expected),
        projection=projection,
        parameters=[[argument, key] for argument, key, _ in weights],
        positional=positional,
    )
    if "not_implemented" in result:
        # Named by the adapter asked for: under the grader the reply is the worker's word.
        raise NotImplementedFailure(message(adapter, result.get("where")), pytrace=False)
    labels = [_label(argument, key) for argument, key, _ in weights]
    names = " or ".join([*expected, *labels])
    if "in_place" in result:
        how = "was written to, which PyTorch refuses for an input that requires grad"
        pytest.fail(inputs_unchanged.message(adapter, names, how), pytrace=False)
    if "returned" in result:
        pytest.fail(f"output: expected a torch.Tensor, got {result['returned']}", pytrace=False)
    if "shape" in result:
        pytest.fail(
            f"output: shape {tuple(result['shape'])}, expected {tuple(projection.shape)}",
            pytrace=False,
        )
    if "detached" in result:
        pytest.fail(f"no gradient reached {names}: {result['detached']}", pytrace=False)
    missing = [name for name in expected if result["grads"][name] is None]
    if missing:
        it = "it" if len(missing) == 1 else "them"
        pytest.fail(
            f"no gradient reached {' or '.join(missing)} (the output does not depend on {it} "
            "through autograd: detached, .data, no_grad or NumPy?)",
            pytrace=False,
        )
    for name, grad in expected.items():
        assert_matches_oracle(
            result["grads"][name], grad, dtype=torch.float32, what=f"the gradient wrt `{name}`",
            **tolerance,
        )  # fmt: skip
    missing = [label for label, g in zip(labels, result["parameter_grads"], strict=True)
               if g is None]  # fmt: skip
    if missing:
        which = ", ".join(f"`{label}`" for label in missing)
        pytest.fail(
            f"no gradient reached the weight{'s' * (len(missing) > 1)} {which}, neither as "
            "given nor in a parameter holding its values: the output does not depend on it "
            "through autograd (computed with .data, .detach(), under no_grad, or from a copy "
            "that is no parameter?)",
            pytrace=False,
        )
    for label, (_, _, name), grad in zip(labels, weights, result["parameter_grads"], strict=True):
        assert_matches_oracle(
            grad, case[f"{EXPECTED}{name}"], dtype=torch.float32,
            what=f"the gradient wrt the weight `{label}`", **tolerance,
        )  # fmt: skip


def _weights_among(kwargs: dict[str, Any], case: Case) -> list[tuple[str, str | None, str]]:
    """The case's weights among the arguments, as (argument, key in its dict or None, SPEC
    name), where the case stores their expected gradient."""
    names = {id(t): name for name, t in case.weights.items()
             if f"{EXPECTED}{name}" in case.tensors}  # fmt: skip
    found = []
    for argument, value in kwargs.items():
        entries = value.items() if isinstance(value, dict) else [(None, value)]
        found += [(argument, key, names[id(t)]) for key, t in entries if id(t) in names]
    return found


def _label(argument: str, key: str | None) -> str:
    return argument if key is None else f"{argument}[{key!r}]"
