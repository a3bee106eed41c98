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


class _Adam(torch.optim.Optimizer):
    """Adam with decoupled weight decay, keeping torch.optim.AdamW's state (`step`,
    `exp_avg`, `exp_avg_sq`, tensors). Written here because the built-in optimizers' `step`
    imports torch._dynamo on its first call (a second or more of CPU, in the worker too),
    and a round trip needs only an optimizer with per-parameter state."""

    def __init__(self, params, lr: float, weight_decay: float, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, betas=betas, eps=eps))

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            (beta1, beta2), lr = group["betas"], group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"].item()
                state["exp_avg"].lerp_(p.grad, 1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                p.mul_(1 - lr * group["weight_decay"])
                denominator = (state["exp_avg_sq"] / (1 - beta2**t)).sqrt_().add_(group["eps"])
                p.addcdiv_(state["exp_avg"], denominator, value=-lr / (1 - beta1**t))


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
    that is missing or raises NotImplementedError fails here, before the training. Any other
    outcome is left to the real round trip to judge."""
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
    """Train a small model with Adam (`_Adam`) for `steps_before + steps_after` steps,
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
        return model, _Adam(model.parameters(), lr=0.05, weight_decay=0.1)

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
