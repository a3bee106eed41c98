"""Whether an adapter handed its tensors back as it got them: fingerprints of a call's tensor
arguments, taken with tensor methods captured at import, before any submission code runs
(docs/maintaining.md, "Inputs handed back unchanged")."""

from __future__ import annotations

from typing import Any

import torch

# Captured at import: what a submission does to torch later does not reach the check.
_TENSOR = torch.Tensor
_DETACH = torch.Tensor.detach
_CPU = torch.Tensor.cpu
_RESHAPE = torch.Tensor.reshape
_CONTIGUOUS = torch.Tensor.contiguous
_VIEW = torch.Tensor.view
_NUMPY = torch.Tensor.numpy
_UINT8 = torch.uint8

Fingerprint = tuple[str, tuple[int, ...], bytes]
# Each tensor argument by name: the tensor itself and its fingerprint before the call.
Fingerprints = dict[str, tuple[torch.Tensor, Fingerprint]]


def _tensors(value: Any, name: str) -> list[tuple[str, torch.Tensor]]:
    """The tensors in `value` (an argument named `name`), each with its name: `weights`,
    `weights['ln1.weight']`, `parameters[2]`."""
    if isinstance(value, _TENSOR):
        return [(name, value)]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _tensors(v, f"{name}[{k!r}]")]
    if isinstance(value, list | tuple):
        return [t for i, v in enumerate(value) for t in _tensors(v, f"{name}[{i}]")]
    return []


def argument_tensors(args: tuple | list, kwargs: dict[str, Any]) -> list[tuple[str, torch.Tensor]]:
    """Every tensor among a call's arguments, named as a message names it (a positional
    argument by its position: `argument 1`)."""
    named = [(f"argument {i + 1}", v) for i, v in enumerate(args)] + list(kwargs.items())
    return [t for name, value in named for t in _tensors(value, name)]


def fingerprint(tensor: torch.Tensor) -> Fingerprint:
    """Dtype, shape and the bytes of the values in logical order (a transpose in place
    changes them, NaNs compare as equal bits)."""
    flat = _CONTIGUOUS(_RESHAPE(_CPU(_DETACH(tensor)), (-1,)))
    return str(tensor.dtype), tuple(tensor.shape), _NUMPY(_VIEW(flat, _UINT8)).tobytes()


def fingerprints(args: tuple | list, kwargs: dict[str, Any]) -> Fingerprints:
    """Every tensor argument that holds values (a meta tensor holds none), with its
    fingerprint."""
    return {name: (t, fingerprint(t)) for name, t in argument_tensors(args, kwargs)
            if not t.is_meta}  # fmt: skip


def changed(before: Fingerprints) -> list[str]:
    """The names of the tensors given whose dtype, shape or values now differ from
    `before`. The tensors themselves are compared, not what the dictionaries and lists
    that held them hold now: an adapter that takes its own `weights` apart (`pop`) or
    rebinds an entry has changed no tensor of the caller's."""
    return [name for name, (tensor, print_) in before.items() if fingerprint(tensor) != print_]


def message(adapter: str, names: str, how: str = "came back changed") -> str:
    """The failure's one line, naming the likely mistake: `names` (of the arguments) `how`."""
    return (
        f"{adapter} changed its input in place: {names} {how} (an in-place operation such "
        "as x.sub_(...), x /= ..., x[...] = ... or .copy_ writes into the caller's tensor); "
        "compute on new tensors, out of place"
    )
