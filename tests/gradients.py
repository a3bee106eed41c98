"""The check every backward test makes: the gradients that reach an adapter's float inputs.

A backward case (`cases="backward"`) stores `grad_projection`, shaped like the output, and
`expected_grad.<argument>`, the oracle's gradient of ``sum(grad_projection * output)`` with
respect to that argument. The adapter runs beside the implementation (the probe
`input_gradients`, in the sandboxed worker under the grader); only the gradients come back.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from cs336_harness import inputs_unchanged, probes
from cs336_harness.adapter_loader import NotImplementedFailure
from cs336_harness.cases import Case
from cs336_harness.compare import assert_matches_oracle
from cs336_harness.not_implemented import message

EXPECTED = "expected_grad."


def assert_input_gradients(
    adapters: Any, case: Case, adapter: str, kwargs: dict[str, Any], tolerance: dict[str, float]
) -> None:
    """Fail unless `adapter(**kwargs)` passes back to each argument with an
    `expected_grad.<argument>` in `case` that gradient, within `tolerance`."""
    __tracebackhide__ = True
    stored = {
        k.removeprefix(EXPECTED): t for k, t in case.tensors.items() if k.startswith(EXPECTED)
    }
    # In the adapter's argument order, so that messages read "Q or K", not "K or Q".
    expected = {name: stored[name] for name in kwargs if name in stored}
    if not expected:
        raise ValueError(f"{case.id}: no expected gradient for any argument of {adapter}")
    projection = case["grad_projection"]
    result = probes.input_gradients(
        adapters,
        adapter=adapter,
        kwargs=kwargs,
        differentiable=list(expected),
        projection=projection,
    )
    if "not_implemented" in result:
        # Named by the adapter asked for: under the grader the reply is the worker's word.
        raise NotImplementedFailure(message(adapter, result.get("where")), pytrace=False)
    names = " or ".join(expected)
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
            result["grads"][name], grad, dtype=torch.float32, what=f"the gradient wrt {name}",
            **tolerance,
        )  # fmt: skip
