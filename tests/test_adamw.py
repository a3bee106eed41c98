"""AdamW: moments, bias correction and decoupled weight decay, per parameter group, over many
steps; the handout's order of update and decay and torch.optim.AdamW's are both accepted."""

import pytest
import torch

from cs336_harness import probes
from cs336_harness.compare import assert_matches_oracle
from tests.tolerances import ADAMW

pytestmark = pytest.mark.family("adamw")


def test_adamw(case, adapters):
    p = case.params
    initial = [case[f"initial.{i}"] for i in range(p["count"])]
    grads = [
        [case.tensors.get(f"grad.{t}.{i}") for i in range(p["count"])] for t in range(p["steps"])
    ]
    out = probes.adamw_trajectory(adapters, initial=initial, grads=grads, groups=p["groups"])
    assert set(out["state_devices"]) <= {"cpu"}, (
        f"optimizer state on {out['state_devices']}, but every parameter is on the CPU"
    )
    flat_steps = [torch.cat([q.reshape(-1) for q in step]) for step in out["trajectory"]]
    trajectory = torch.stack(flat_steps)
    readings = {"the handout's": case.expected, "torch.optim.AdamW's": case["expected_torch_order"]}

    def distance(expected: torch.Tensor) -> float:
        if trajectory.shape != expected.shape:
            return float("inf")
        return (trajectory.double() - expected.double()).abs().max().item()

    order = min(readings, key=lambda name: distance(readings[name]))
    assert_matches_oracle(
        trajectory, readings[order], dtype=torch.float32, **ADAMW,
        what=f"the parameters after each step (rows: steps), compared with {order} order of "
        "decay and update, the nearer of the two accepted",
    )  # fmt: skip
