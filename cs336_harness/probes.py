"""Checks of adapters that take or return objects, run beside the adapters module.

Most adapters map tensors to a tensor, so a test can call them anywhere, the grader's
sandboxed worker included. A few work on objects no wire can carry: an optimizer class
(`get_adamw_cls`), parameters whose `.grad` is changed in place (`run_gradient_clipping`),
a NumPy memmap (`run_get_batch`), a model and optimizer to checkpoint. A *probe* is a
function of plain data that builds those objects, drives the adapters and returns plain
data (tensors, numbers, lists) for the test to judge. Run locally, it gets the adapters
module; under the grader it runs in the worker, in the submission's process, so the
verdict stays in the judge. A submission can tamper with a probe there, but it gains only
what it could by calling PyTorch's own functions from its adapters: the probe's inputs and
the expected values stay with the judge.

Tests call a probe like a function: `probes.adamw_trajectory(adapters, ...)`.
"""

from __future__ import annotations

import contextlib
import functools
import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch

from cs336_harness import inputs_unchanged
from cs336_harness.bpe_fingerprint import unpack
from cs336_harness.not_implemented import where_raised
from cs336_harness.rules.runtime import handing_over


class MissingAdapter(NotImplementedError):
    """The adapters module has no such function (reported as "not implemented")."""


# name -> (the probe, the adapters it needs: named in a "not implemented" message)
PROBES: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {}


def adapter(module: ModuleType, name: str) -> Callable[..., Any]:
    """The adapter `name` of `module`, for a probe to call: what it returns goes to the
    harness's objects, which the rules' watcher is told of (`handing_over`)."""
    function = getattr(module, name, None)
    if not callable(function):
        raise MissingAdapter(name)
    return handing_over(function)


def probe(*needs: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a probe of the adapters `needs`; the decorated name takes `adapters` first."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        PROBES[function.__name__] = (function, needs)

        @functools.wraps(function)
        def run(adapters: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return adapters.probe(function.__name__, kwargs)

        return run

    return register


def run_probe(module: ModuleType, name: str, kwargs: dict[str, Any]) -> Any:
    """Run probe `name` against `module`, in this process."""
    function, _ = PROBES[name]
    return function(module, **kwargs)


def needs_of(name: str) -> tuple[str, ...]:
    return PROBES[name][1] if name in PROBES else (name,)


# -- input gradients -------------------------------------------------------------------------


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


# -- gradient clipping -----------------------------------------------------------------------


@probe("run_gradient_clipping")
def gradient_clipping(
    module: ModuleType,
    values: list[torch.Tensor],
    grads: list[torch.Tensor | None],
    max_l2_norm: float,
    as_generator: bool = False,
) -> dict[str, list[torch.Tensor | None]]:
    """Parameters holding `values` and `grads` (None: no gradient, and frozen), clipped in
    place; their gradients and values afterwards. `as_generator`: handed over as a
    generator, which can be iterated once (as `model.parameters()` is), rather than the
    tuple upstream's test passes."""
    params = [torch.nn.Parameter(v.clone()) for v in values]
    for p, g in zip(params, grads, strict=True):
        p.grad = None if g is None else g.clone()
        # Upstream's parameter without a gradient is a frozen one.
        p.requires_grad_(g is not None)
    # A tuple, positionally, as upstream's test passes them.
    given = (p for p in params) if as_generator else tuple(params)
    adapter(module, "run_gradient_clipping")(given, max_l2_norm)
    return {"grads": [p.grad for p in params], "values": [p.detach() for p in params]}


# -- AdamW -------------------------------------------------------------------------------------


@probe("get_adamw_cls")
def adamw_trajectory(
    module: ModuleType,
    initial: list[torch.Tensor],
    grads: list[list[torch.Tensor | None]],
    groups: list[dict[str, Any]],
    device: str = "cpu",
    resume_at: int | None = None,
) -> dict[str, Any]:
    """Parameters starting at `initial`, stepped by the submission's AdamW with the gradient
    `grads[t][i]` for parameter i at step t (None: no gradient that step).

    `groups` are the optimizer's parameter groups: each has `params` (indices into
    `initial`) and hyperparameters; the first group's hyperparameters are also passed as
    the constructor's keyword arguments. After `resume_at` steps (None: never), the
    optimizer's `state_dict()` goes through `torch.save` and `torch.load`, as in a
    checkpoint, into a fresh optimizer that takes the remaining steps. Returns every
    parameter after every step, and the devices the optimizer's state tensors live on.
    """
    params = [torch.nn.Parameter(v.clone().to(device)) for v in initial]
    param_groups = [
        {k: v for k, v in g.items() if k != "params"} | {"params": [params[i] for i in g["params"]]}
        for g in groups
    ]
    defaults = {k: v for k, v in groups[0].items() if k != "params"}
    if "betas" in defaults:
        defaults["betas"] = tuple(defaults["betas"])
    for g in param_groups:
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
    adamw = adapter(module, "get_adamw_cls")()

    def constructed() -> torch.optim.Optimizer:
        # One group: the parameters as a generator and the hyperparameters as keywords, as
        # upstream's test builds it from `model.parameters()`; several: the groups.
        given = iter(param_groups[0]["params"]) if len(param_groups) == 1 else param_groups
        return adamw(given, **defaults)

    optimizer = constructed()
    trajectory = []
    for t, step in enumerate(grads):
        if t == resume_at:
            saved = io.BytesIO()
            torch.save(optimizer.state_dict(), saved)
            saved.seek(0)
            optimizer = constructed()
            optimizer.load_state_dict(torch.load(saved, weights_only=False))
        optimizer.zero_grad(set_to_none=True)
        for p, g in zip(params, step, strict=True):
            p.grad = None if g is None else g.clone().to(device)
        optimizer.step()
        trajectory.append([p.detach().clone() for p in params])
    state_devices = sorted(
        {
            str(value.device)
            for state in optimizer.state.values()
            for value in state.values()
            if isinstance(value, torch.Tensor) and value.ndim > 0
        }
    )
    return {"trajectory": trajectory, "state_devices": state_devices}


# -- batches ------------------------------------------------------------------------------


@probe("run_get_batch")
def get_batch_samples(
    module: ModuleType,
    dataset: torch.Tensor,
    batch_size: int,
    context_length: int,
    calls: int,
    device: str = "cpu",
    memmap: bool = False,
) -> dict[str, Any]:
    """`calls` batches from `dataset` (1-D ids), given as a NumPy array, or as a read-only
    uint16 `np.memmap` of a file when `memmap`; every x and y, stacked, and their devices
    and dtypes (as `str(tensor.dtype)`)."""
    array = dataset.numpy()
    with tempfile.TemporaryDirectory() as tmp:
        if memmap:
            path = Path(tmp) / "tokens.bin"
            array.astype(np.uint16).tofile(path)
            array = np.memmap(path, dtype=np.uint16, mode="r")
        get_batch = adapter(module, "run_get_batch")
        xs, ys, devices, dtypes = [], [], set(), set()
        for _ in range(calls):
            x, y = get_batch(
                dataset=array, batch_size=batch_size, context_length=context_length, device=device
            )
            devices |= {str(x.device), str(y.device)}
            dtypes |= {str(x.dtype), str(y.dtype)}
            if x.device.type != "meta" and y.device.type != "meta":  # meta tensors hold no values
                # As int64, which the wire carries whatever the dtype (a uint16 is refused).
                xs.append(x.detach().cpu().to(torch.int64))
                ys.append(y.detach().cpu().to(torch.int64))
        del array  # the memmap's file is removed with `tmp`
    empty = torch.empty(0, dtype=torch.int64)
    return {
        "x": torch.cat(xs) if xs else empty,
        "y": torch.cat(ys) if ys else empty,
        "devices": sorted(devices),
        "dtypes": sorted(dtypes),
    }


# -- checkpoints -----------------------------------------------------------------------------


class _CheckpointNet(torch.nn.Module):
    """A small model with a buffer besides its parameters, for checkpoint round trips."""

    def __init__(self, seed: int):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.first = torch.nn.Linear(8, 16)
        self.second = torch.nn.Linear(16, 4)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.second(torch.tanh(self.first(x)))


def _train(model: _CheckpointNet, optimizer: torch.optim.Optimizer, data, steps: range) -> None:
    for t in steps:
        x, y = data[t]
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def _snapshot(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    """Every tensor of the training state, by name: `model.<key>`, `optimizer.<i>.<key>`."""
    state = {f"model.{k}": t.detach().clone() for k, t in model.state_dict().items()}
    for i, per_param in enumerate(optimizer.state.values()):
        state |= {
            f"optimizer.{i}.{k}": v.detach().clone()
            for k, v in per_param.items()
            if isinstance(v, torch.Tensor)
        }
    return state


class _OptimizerStandIn:
    """Enough of an optimizer for a checkpoint's round trip, without torch.optim."""

    def state_dict(self) -> dict[str, Any]:
        return {"state": {}, "param_groups": []}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        pass


def _fail_fast_if_not_implemented(module: ModuleType) -> None:
    """Save and load a checkpoint of an untrained model with a stand-in optimizer: an adapter
    that is missing or raises NotImplementedError fails here, before the training (creating a
    torch.optim optimizer imports torch._dynamo, seconds on a cold start). Any other outcome
    is left to the real round trip to judge."""
    model, out = _CheckpointNet(0), io.BytesIO()
    try:
        adapter(module, "run_save_checkpoint")(model, _OptimizerStandIn(), iteration=0, out=out)
        out.seek(0)
        adapter(module, "run_load_checkpoint")(src=out, model=model, optimizer=_OptimizerStandIn())
    except NotImplementedError:
        raise
    except Exception:  # judged by the round trip below, with a real optimizer
        pass


@probe("run_save_checkpoint", "run_load_checkpoint")
def checkpoint_resume(
    module: ModuleType,
    seed: int,
    steps_before: int,
    steps_after: int,
    target: str,
    device: str = "cpu",
) -> dict[str, Any]:
    """Train a small model with `torch.optim.AdamW` for `steps_before + steps_after` steps,
    once straight through and once saved after `steps_before` (to a path, or a file object
    when `target` is "file") and resumed in a fresh model and optimizer (initialised from
    another seed) with the adapters. The models and their data are on `device` (drawn on
    the CPU, so every device starts from the same values). Returns both end states (model
    state dict, then the optimizer's state tensors), the iteration `run_load_checkpoint`
    returned, and whether saving wrote anything."""
    _fail_fast_if_not_implemented(module)
    generator = torch.Generator().manual_seed(seed)
    total = steps_before + steps_after
    data = [(torch.randn(5, 8, generator=generator).to(device),
             torch.randn(5, 4, generator=generator).to(device)) for _ in range(total)]  # fmt: skip

    def fresh(init_seed: int) -> tuple[_CheckpointNet, torch.optim.Optimizer]:
        model = _CheckpointNet(init_seed).to(device)
        return model, torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)

    model, optimizer = fresh(seed)
    _train(model, optimizer, data, range(total))
    straight = _snapshot(model, optimizer)

    model, optimizer = fresh(seed)
    _train(model, optimizer, data, range(steps_before))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "checkpoint.pt"
        out: Any = io.BytesIO() if target == "file" else path
        adapter(module, "run_save_checkpoint")(model, optimizer, iteration=steps_before, out=out)
        if isinstance(out, io.BytesIO):
            written = out.getbuffer().nbytes
            out.seek(0)
        else:
            written = path.stat().st_size if path.is_file() else 0
        model, optimizer = fresh(seed + 1)
        iteration = adapter(module, "run_load_checkpoint")(
            src=out, model=model, optimizer=optimizer
        )
    _train(model, optimizer, data, range(steps_before, total))
    return {
        "uninterrupted": straight,
        "resumed": _snapshot(model, optimizer),
        "iteration": iteration if type(iteration) is int else repr(iteration)[:100],
        "bytes_written": int(written),
    }


# -- tokenizer ---------------------------------------------------------------------------------


def _byte_lists(strings: list[bytes]) -> list[list[int]]:
    return [list(s) for s in strings]


@probe("run_train_bpe")
def bpe_training(
    module: ModuleType, corpus: torch.Tensor, vocab_size: int, special_tokens: list[str]
) -> dict[str, Any]:
    """`run_train_bpe` on a file holding `corpus` (its UTF-8 bytes as a uint8 tensor: the
    wire's strings are capped in length, its tensors are not). Returns the vocabulary as
    `ids` and `tokens` (each a list of byte values) and the merges as pairs of byte-value
    lists: the wire carries no bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.txt"
        path.write_bytes(bytes(corpus.tolist()))
        # As upstream's test calls it: a pathlib.Path, by keyword.
        train = adapter(module, "run_train_bpe")
        vocab, merges = train(input_path=path, vocab_size=vocab_size, special_tokens=special_tokens)
    ids = sorted(vocab)
    return {
        "ids": [int(i) for i in ids],
        "tokens": _byte_lists([bytes(vocab[i]) for i in ids]),
        "merges": [_byte_lists([bytes(a), bytes(b)]) for a, b in merges],
    }


@probe("get_tokenizer")
def tokenizer_outputs(
    module: ModuleType,
    vocab_flat: torch.Tensor,
    vocab_lengths: torch.Tensor,
    merges_flat: torch.Tensor,
    merges_lengths: torch.Tensor,
    special_tokens: list[str] | None,
    texts: list[str],
    ids_to_decode: list[list[int]],
) -> dict[str, Any]:
    """A tokenizer from the vocabulary (ids 0 … V−1 in order) and merges, stored as in the
    fixtures. For each text: `encode`, `decode` of that, and `encode_iterable` over the text
    as a text file object (which iterates its lines, as upstream's open file does); for each
    id list, `decode`. Each answer is the value or `{"error": ...}`, the error it raised: one
    method's bug (`encode_iterable` calling `next` on an empty file) fails its own test, not
    its neighbours'. NotImplementedError is not caught: an unwritten method is reported so."""
    tokens = unpack(vocab_flat, vocab_lengths)
    halves = unpack(merges_flat, merges_lengths)
    merges = list(zip(halves[0::2], halves[1::2], strict=True))
    tok = adapter(module, "get_tokenizer")(dict(enumerate(tokens)), merges, special_tokens)
    encoded = _each(lambda text: [int(i) for i in tok.encode(text)], texts)
    return {
        "encoded": encoded,
        # Where encode raised, its error stands for the round trip too.
        "round_trip": [e if isinstance(e, dict) else _each(tok.decode, [e])[0] for e in encoded],
        "iterable": _each(lambda t: [int(i) for i in tok.encode_iterable(io.StringIO(t))], texts),
        "decoded": _each(tok.decode, ids_to_decode),
    }


def _each(method: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """`method(item)` for each item, or `{"error": "Type: message"}` where it raised."""
    answers = []
    for item in items:
        try:
            answers.append(method(item))
        except NotImplementedError:
            raise
        except Exception as error:  # reported to the test, which names the input
            answers.append({"error": f"{type(error).__name__}: {error}"})
    return answers


# -- the LM and the block as modules ----------------------------------------------------------


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
