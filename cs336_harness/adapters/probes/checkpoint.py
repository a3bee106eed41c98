"""The checkpoint probe: a run saved part-way, resumed, and compared with one never stopped."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from cs336_harness.adapters.probes.registry import adapter, probe


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
