"""The Transformer LM and block as modules: what `get_transformer_lm` and
`get_transformer_block` build, untrained, judged as plain data from probes (parameters,
buffers, a strict load, the LM's gradients), on the CPU whatever `--device`
(docs/checking.md, "The LM and the block as modules")."""

from typing import Any

import pytest
import torch

from cs336_harness.adapters.probes import modules as probes
from cs336_harness.families import family
from cs336_harness.judging.cases import Case
from cs336_harness.judging.diagnosis.first_difference import (
    BLOCK_SIZES,
    LM_SIZES,
    describe_difference,
)

FAMILY = family("transformer_lm_module")
PLAIN_TENSORS_WHY = (
    "upstream never moves or casts a module, so a RoPE table may be a plain attribute, "
    "or recomputed each call; a buffer follows .to(device) and .half()"
)


def _lm_sizes(case: Case) -> dict[str, Any]:
    return {key: case.params[key] for key in (*LM_SIZES, "rope_theta")}


def _lm_facts(adapters: Any, case: Case) -> dict[str, Any]:
    return probes.lm_module_facts(adapters, sizes=_lm_sizes(case), weights=case.weights)


def _block_facts(adapters: Any, case: Case) -> dict[str, Any]:
    sizes = {key: case.params[key] for key in BLOCK_SIZES}
    return probes.block_module_facts(adapters, sizes=sizes, weights=case.weights)


def _spec_parameter_problems(facts: dict[str, Any], weights: dict[str, torch.Tensor]) -> list[str]:
    """Each way the registered parameters depart from the SPEC's names and shapes (those of
    the reference weights), one line each."""
    registered = {name: tuple(shape) for name, shape in facts["parameters"].items()}
    problems = []
    for name, weight in weights.items():
        spec = tuple(weight.shape)
        if name in facts["plain_tensors"]:
            problems.append(
                f"{name} is not a registered parameter: a tensor stored as a plain attribute "
                "is invisible to the optimizer and to state_dict (wrap it in nn.Parameter)"
            )
        elif name in facts["buffers"]:
            problems.append(f"{name} is a buffer, not a parameter: the optimizer never sees it")
        elif name not in registered:
            problems.append(f"{name} {spec}: missing (no parameter of that name)")
        elif registered[name] != spec:
            transposed = registered[name] == spec[::-1] and len(spec) == 2
            problems.append(
                f"{name} has shape {registered[name]}, the SPEC's is {spec}"
                + (" (transposed: nn.Linear's layout is (out, in))" if transposed else "")
            )
    problems += [
        f"{name} {shape}: a parameter the SPEC does not have"
        for name, shape in registered.items()
        if name not in weights
    ]
    problems += [
        f"{name} has requires_grad=False: training would never change it"
        for name in facts["frozen"]
        if name in weights
    ]
    return problems


def _assert_spec_parameters(facts: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
    __tracebackhide__ = True
    problems = _spec_parameter_problems(facts, weights)
    if problems:
        pytest.fail(
            f"the module's parameters are not the SPEC's ({len(problems)} problems):\n  "
            + "\n  ".join(problems),
            pytrace=False,
        )


def _assert_strict_load(facts: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
    __tracebackhide__ = True
    if facts["load_error"] is None:
        return
    saved_buffers = [
        name
        for name, buffer in facts["buffers"].items()
        if buffer["persistent"] and name not in weights
    ]
    hints = [
        f"buffer {name} is saved in state_dict, and the reference weights have no such entry: "
        "register it with persistent=False (a table computed from the sizes is no weight)"
        for name in saved_buffers
    ]
    pytest.fail(
        "load_state_dict(reference weights, strict=True) fails: "
        + "\n  ".join([facts["load_error"], *hints]),
        pytrace=False,
    )


def _assert_no_plain_tensors(facts: dict[str, Any]) -> None:
    __tracebackhide__ = True
    plain = facts["plain_tensors"]
    if plain:
        listed = ", ".join(f"{name} {tuple(shape)}" for name, shape in plain.items())
        pytest.fail(
            f"tensors kept as plain attributes: {listed}. model.to(device) and .half() leave "
            "them behind and state_dict never sees them: make them parameters, buffers "
            "(persistent=False for tables computed from the sizes), or compute them in forward",
            pytrace=False,
        )


# -- the LM ----------------------------------------------------------------------------------


@pytest.mark.family("transformer_lm_module")
def test_lm_registers_the_spec_parameters(case, adapters):
    _assert_spec_parameters(_lm_facts(adapters, case), case.weights)


@pytest.mark.family("transformer_lm_module")
def test_lm_loads_the_reference_weights_strictly(case, adapters):
    _assert_strict_load(_lm_facts(adapters, case), case.weights)


@pytest.mark.family("transformer_lm_module")
@pytest.mark.hardening(PLAIN_TENSORS_WHY)
def test_lm_keeps_no_tensor_as_a_plain_attribute(case, adapters):
    _assert_no_plain_tensors(_lm_facts(adapters, case))


@pytest.mark.family("transformer_lm_module")
def test_lm_parameter_gradients(case, adapters):
    """Every parameter's gradient of `sum(grad_projection * logits)` with the case's
    weights, against the oracle's (by `expected_grad.<parameter name>`)."""
    result = probes.lm_parameter_gradients(
        adapters,
        sizes=_lm_sizes(case),
        weights=case.weights,
        in_indices=case["in_indices"],
        projection=case["grad_projection"],
    )
    grads, problems = result["grads"], []
    for name in case.weights:
        expected = case[f"expected_grad.{name}"]
        if name not in grads:
            problems.append(f"{name}: not a registered parameter, so it gets no gradient")
            continue
        if grads[name] is None:
            problems.append(f"{name}: no gradient reached it (detached, .data or no_grad?)")
            continue
        tolerance = FAMILY.tolerance
        # atol is relative to the gradient's largest entry (see cs336_harness/tolerances.py).
        atol = tolerance["atol"] * float(expected.abs().max())
        off = describe_difference(grads[name], expected, tolerance["rtol"], atol)
        if off is not None:
            problems.append(f"{name}: {off} (allowed {atol:.2g} + {tolerance['rtol']}·|g|)")
    if problems:
        loaded = result["load_error"]
        pytest.fail(
            f"the parameter gradients differ from the oracle's for {len(problems)} of "
            f"{len(case.weights)} parameters:\n  "
            + "\n  ".join(problems)
            + (f"\n(the weights loaded only non-strictly: {loaded})" if loaded else ""),
            pytrace=False,
        )


# -- the block -------------------------------------------------------------------------------


@pytest.mark.family("transformer_block_module")
def test_block_registers_the_spec_parameters(case, adapters):
    _assert_spec_parameters(_block_facts(adapters, case), case.weights)


@pytest.mark.family("transformer_block_module")
def test_block_loads_the_reference_weights_strictly(case, adapters):
    _assert_strict_load(_block_facts(adapters, case), case.weights)


@pytest.mark.family("transformer_block_module")
@pytest.mark.hardening(PLAIN_TENSORS_WHY)
def test_block_keeps_no_tensor_as_a_plain_attribute(case, adapters):
    _assert_no_plain_tensors(_block_facts(adapters, case))
