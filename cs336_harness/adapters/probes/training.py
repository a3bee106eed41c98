"""The training half's probes: gradient clipping in place, AdamW's trajectory, get_batch's
samples."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch

from cs336_harness.adapters.probes.registry import adapter, probe


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
