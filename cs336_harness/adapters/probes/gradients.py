"""The input-gradient probe: an adapter differentiated through its float inputs and weights."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import torch
from torch.nn.modules import module as nn_module

from cs336_harness.adapters import inputs_unchanged
from cs336_harness.adapters.not_implemented import where_raised
from cs336_harness.adapters.probes.registry import probe

# PyTorch's refusal of an in-place operation on a tensor that requires grad: an input here.
IN_PLACE_ON_LEAF = "a leaf Variable that requires grad is being used in an in-place operation"


@probe()
def input_gradients(
    module: ModuleType,
    adapter: str,
    kwargs: dict[str, Any],
    differentiable: list[str],
    projection: torch.Tensor,
    parameters: list[list[str | None]] | None = None,
    positional: int = 0,
) -> dict[str, Any]:
    """Call `adapter` (a `run_*` name) with `kwargs`, the tensors named in `differentiable`
    and the weights in `parameters` replaced by leaf copies that require grad, and take the
    gradients of ``sum(output * projection)``. The first `positional` arguments of `kwargs`
    go by position, where upstream's tests pass them so (`run_silu(x)`).

    A weight is `[argument, key]`: the argument itself (key None) or its dict's entry `key`.
    Its gradient is its own leaf's where the adapter computes with it as given; else that of
    a parameter in the output's graph holding its values (a module the adapter built and
    loaded it into: `_gradient_held`); else None.

    Returns ``{"grads": {name: gradient or None}, "parameter_grads": [gradient or None, in
    the order of parameters]}``; or, without running the backward,
    ``{"detached": reason}`` when the output does not require grad (nothing connects it to
    the inputs through autograd), ``{"returned": type name}`` for an output that is not a
    tensor, ``{"shape": [...]}`` when it is not shaped like `projection`,
    ``{"in_place": True}`` when PyTorch refused an in-place operation on an input,
    ``{"not_implemented": adapter}`` for a missing adapter or one that
    raises NotImplementedError, with ``"where"`` it was raised when that was below the
    adapter (the adapter is an argument here, so this probe names it itself rather than
    through its registration).
    """
    if not adapter.startswith("run_"):
        raise ValueError(f"input_gradients drives run_* adapters, not {adapter!r}")
    function = getattr(module, adapter, None)
    if not callable(function):
        return {"not_implemented": adapter}
    leaves = {name: _leaf(kwargs[name]) for name in differentiable}
    call = kwargs | leaves
    weights = []
    for argument, key in parameters or []:
        if key is None:
            call[argument] = weight = _leaf(kwargs[argument])
        else:
            if call[argument] is kwargs[argument]:
                call[argument] = dict(kwargs[argument])
            call[argument][key] = weight = _leaf(kwargs[argument][key])
        weights.append(weight)
    names = list(call)
    args, keywords = [call[n] for n in names[:positional]], {n: call[n] for n in names[positional:]}
    try:
        with _autograd_in_modules():
            out = function(*args, **keywords)
        left_off = not torch.is_grad_enabled()
    except NotImplementedError as error:
        return {"not_implemented": adapter, "where": where_raised(error, module, [adapter])}
    except RuntimeError as error:
        if IN_PLACE_ON_LEAF not in str(error):
            raise
        return {"in_place": True}
    finally:
        # An adapter that switches autograd off for good fails here, not every test after it.
        torch.set_grad_enabled(True)
    if not isinstance(out, torch.Tensor):
        return {"returned": type(out).__name__}
    if tuple(out.shape) != tuple(projection.shape):
        return {"shape": list(out.shape)}
    if not out.requires_grad:
        if left_off:
            why = "autograd was switched off and left off"
        elif out.is_inference():
            why = "computed in inference mode"
        else:
            why = "no_grad, .detach(), .data or NumPy?"
        return {"detached": f"the output does not require grad ({why})"}
    given = [*leaves.values(), *weights]
    ids = {id(t) for t in given}
    built = [t for t in _graph_leaves(out) if id(t) not in ids]
    loss = (out * projection.to(device=out.device, dtype=out.dtype)).sum()
    grads = torch.autograd.grad(loss, [*given, *built], allow_unused=True)
    held = [(p, g) for p, g in zip(built, grads[len(given) :], strict=True) if g is not None]
    parameter_grads = [
        grad if grad is not None else _gradient_held(weight, held)
        for weight, grad in zip(weights, grads[len(leaves) : len(given)], strict=True)
    ]
    return {
        "grads": dict(zip(leaves, grads[: len(leaves)], strict=True)),
        "parameter_grads": parameter_grads,
    }


@contextlib.contextmanager
def _autograd_in_modules() -> Iterator[None]:
    """Autograd switched back on for the forward of each outermost `nn.Module` the adapter
    calls under `torch.no_grad()`, and off again after it. Upstream's adapters promise no
    gradient and upstream never runs backward through them, so an adapter that runs its
    model under no_grad is glue, not a mistake; a module that switches autograd off inside
    its own forward (or detaches) is still caught. Inference mode is left as it is."""
    switched: list[bool] = []  # per module call in progress: whether it switched autograd on

    def before(module: torch.nn.Module, args: Any) -> None:
        outermost = not switched
        off = not torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
        switched.append(outermost and off)
        if switched[-1]:
            torch.set_grad_enabled(True)

    def after(module: torch.nn.Module, args: Any, output: Any) -> None:
        if switched and switched.pop():
            torch.set_grad_enabled(False)

    handles = [
        nn_module.register_module_forward_pre_hook(before),
        nn_module.register_module_forward_hook(after),
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _leaf(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of `tensor` that requires grad and has no history: a leaf of the graph."""
    return tensor.detach().clone().requires_grad_(True)


def _graph_leaves(out: torch.Tensor) -> list[torch.Tensor]:
    """The leaf tensors the output's autograd graph accumulates gradients into (the
    parameters it was computed from), each once."""
    leaves, seen, stack = [], set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        # The nodes themselves, not their ids: a node's Python object may be made anew on
        # each visit, and an id freed with it is reused (torch 2.6 walked nothing that way).
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # an AccumulateGrad node's leaf
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return leaves


def _gradient_held(
    weight: torch.Tensor, held: list[tuple[torch.Tensor, torch.Tensor]]
) -> torch.Tensor | None:
    """The gradient of the parameter that holds `weight`'s values, cut to `weight`'s shape;
    or of the parameters that hold it in equal pieces, joined; None when none does. A
    parameter holds them when its values in logical order, or for a matrix those of its
    transpose, contain them as one aligned block: the weight as given, reshaped (heads split
    out), transposed (stored for x @ W), or one of several fused into one parameter (q, k and
    v stacked as one projection). Equal pieces are aligned blocks of the weight's values,
    each a parameter (or its transpose): a projection split into one `Linear` per head. Each
    is a correct way to store it. Compared as bytes, so a submission's patched comparisons
    cannot make a match."""
    dtype, _, wanted = inputs_unchanged.fingerprint(weight)
    n = weight.numel()
    if n == 0:
        return None
    pieces: dict[int, dict[int, torch.Tensor]] = {}
    for values, gradient in _views(held):
        kind, _, raw = inputs_unchanged.fingerprint(values)
        m = values.numel()
        if kind != dtype or m == 0:
            continue
        if m % n == 0:
            size = len(wanted)
            for block in range(m // n):
                if raw[block * size : (block + 1) * size] == wanted:
                    flat = gradient.reshape(-1)
                    return flat[block * n : (block + 1) * n].reshape(weight.shape)
        elif n % m == 0:
            size = len(raw)
            found = [b for b in range(n // m) if wanted[b * size : (b + 1) * size] == raw]
            if found:
                pieces.setdefault(m, {})[found[0]] = gradient.reshape(-1)
    for m, found in pieces.items():
        if len(found) == n // m:
            return torch.cat([found[b] for b in range(n // m)]).reshape(weight.shape)
    return None


def _views(
    held: list[tuple[torch.Tensor, torch.Tensor]],
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each parameter and its gradient, and for a matrix also both transposed."""
    views = []
    for parameter, grad in held:
        views.append((parameter.detach(), grad))
        if parameter.ndim == 2:
            views.append((parameter.detach().T, grad.T))
    return views
