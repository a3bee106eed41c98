"""The probes of the LM and the block as modules: their parameters, sublayer trace and gradients."""

from __future__ import annotations

import contextlib
import functools
from types import ModuleType
from typing import Any

import torch

from cs336_harness.adapters.probes.registry import adapter, probe


def _built(module: ModuleType, name: str, sizes: dict[str, Any]) -> torch.nn.Module:
    """The untrained model that the adapter `name` builds from `sizes`, in evaluation mode."""
    model = adapter(module, name)(**sizes)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{name} returned a {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


def _load(model: torch.nn.Module, weights: dict[str, torch.Tensor]) -> str | None:
    """Load `weights` strictly: None when that works, else the error on one line, after
    loading whatever fits non-strictly (so that a trace of the model still means something)."""
    try:
        model.load_state_dict(weights, strict=True)
    except Exception as error:  # the test reports it: any exception is the outcome
        # A shape mismatch fails non-strictly too; the strict error already says so.
        with contextlib.suppress(Exception):
            model.load_state_dict(weights, strict=False)
        return f"{type(error).__name__}: {' '.join(str(error).split())}"[:1500]
    return None


# Where nn.Module keeps the tensors it knows about; any other tensor attribute is plain.
_REGISTRIES = frozenset({"_parameters", "_buffers"})


def _plain_tensors(model: torch.nn.Module) -> dict[str, list[int]]:
    """Tensors held as plain attributes (or in a list, tuple or dict attribute), which
    `state_dict`, `parameters()` and `.to()` never see; their names and shapes."""
    found: dict[str, list[int]] = {}
    for prefix, sub in model.named_modules():
        for attr, value in vars(sub).items():
            if attr in _REGISTRIES:
                continue
            if isinstance(value, dict):
                items = [(f"{attr}[{k!r}]", v) for k, v in value.items()]
            elif isinstance(value, list | tuple):
                items = [(f"{attr}[{i}]", v) for i, v in enumerate(value)]
            else:
                items = [(attr, value)]
            for name, item in items:
                if isinstance(item, torch.Tensor):
                    found[f"{prefix}.{name}" if prefix else name] = list(item.shape)
    return found


def _module_facts(model: torch.nn.Module, weights: dict[str, torch.Tensor]) -> dict[str, Any]:
    state = model.state_dict()
    return {
        "parameters": {name: list(p.shape) for name, p in model.named_parameters()},
        "frozen": [name for name, p in model.named_parameters() if not p.requires_grad],
        "buffers": {
            name: {"shape": list(b.shape), "persistent": name in state}
            for name, b in model.named_buffers()
        },
        "plain_tensors": _plain_tensors(model),
        "state_dict": {name: list(t.shape) for name, t in state.items()},
        "load_error": _load(model, weights),
    }


@probe("get_transformer_lm")
def lm_module_facts(
    module: ModuleType, sizes: dict[str, Any], weights: dict[str, torch.Tensor]
) -> dict[str, Any]:
    """The LM that `get_transformer_lm(**sizes)` builds: its registered parameters (name →
    shape) and those with `requires_grad` off (`frozen`), its buffers (shape, whether
    `state_dict` holds them), tensors kept as plain attributes, its state dict's names and
    shapes, and how `load_state_dict(weights, strict=True)` went (`load_error`, None: it
    loaded)."""
    return _module_facts(_built(module, "get_transformer_lm", sizes), weights)


@probe("get_transformer_block")
def block_module_facts(
    module: ModuleType, sizes: dict[str, Any], weights: dict[str, torch.Tensor]
) -> dict[str, Any]:
    """As `lm_module_facts`, for the block of `get_transformer_block(**sizes)`."""
    return _module_facts(_built(module, "get_transformer_block", sizes), weights)


def _first_tensor(values: Any) -> torch.Tensor | None:
    for value in values:
        if isinstance(value, torch.Tensor):
            return value.detach().clone()  # a later in-place update must not change it
    return None


def _sublayer_trace(
    model: torch.nn.Module, weights: dict[str, torch.Tensor], x: torch.Tensor, names: list[str]
) -> dict[str, Any]:
    load_error = _load(model, weights)
    missing, calls, seen = [], {}, {}

    def hook(name: str, _module: Any, args: tuple, kwargs: dict, output: Any) -> None:
        calls[name] = calls.get(name, 0) + 1
        if name not in seen:  # the first call is the one in forward order
            outputs = output if isinstance(output, list | tuple) else (output,)
            seen[name] = {
                "input": _first_tensor([*args, *kwargs.values()]),
                "output": _first_tensor(outputs),
            }

    handles = []
    for name in names:
        try:
            sublayer = model.get_submodule(name)
        except AttributeError:
            missing.append(name)
            continue
        handles.append(
            sublayer.register_forward_hook(functools.partial(hook, name), with_kwargs=True)
        )
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return {
        "load_error": load_error,
        "missing": missing,
        "sublayers": {name: seen[name] | {"calls": calls[name]} for name in seen},
    }


@probe("get_transformer_lm")
def lm_sublayer_trace(
    module: ModuleType,
    sizes: dict[str, Any],
    weights: dict[str, torch.Tensor],
    in_indices: torch.Tensor,
    names: list[str],
) -> dict[str, Any]:
    """The LM of `get_transformer_lm(**sizes)` holding `weights`, run on `in_indices` with a
    forward hook on each submodule in `names` (`layers.0.attn`, `ln_final`, ...).

    Returns `sublayers`: for each submodule that ran, its first call's input (the first
    tensor argument) and output (the first tensor returned), and how often it ran;
    `missing`: the names the model has no submodule for; `load_error` as `lm_module_facts`.
    """
    model = _built(module, "get_transformer_lm", sizes)
    return _sublayer_trace(model, weights, in_indices, names)


@probe("get_transformer_block")
def block_sublayer_trace(
    module: ModuleType,
    sizes: dict[str, Any],
    weights: dict[str, torch.Tensor],
    in_features: torch.Tensor,
    names: list[str],
) -> dict[str, Any]:
    """As `lm_sublayer_trace`, for the block of `get_transformer_block(**sizes)` run on
    `in_features` (positions left to their default)."""
    model = _built(module, "get_transformer_block", sizes)
    return _sublayer_trace(model, weights, in_features, names)


@probe("get_transformer_lm")
def lm_parameter_gradients(
    module: ModuleType,
    sizes: dict[str, Any],
    weights: dict[str, torch.Tensor],
    in_indices: torch.Tensor,
    projection: torch.Tensor,
) -> dict[str, Any]:
    """The gradient of `sum(projection * logits)` for each registered parameter of the LM of
    `get_transformer_lm(**sizes)` holding `weights` (None: the parameter got none), and
    `load_error` as `lm_module_facts`."""
    model = _built(module, "get_transformer_lm", sizes)
    load_error = _load(model, weights)
    logits = model(in_indices)
    (projection.to(logits.dtype) * logits).sum().backward()
    return {
        "load_error": load_error,
        "grads": {name: p.grad for name, p in model.named_parameters()},
    }
