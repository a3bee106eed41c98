"""Gradient clipping: every gradient scaled by max / (‖g‖ + 1e-6) when the global norm ‖g‖
of all of them together exceeds max; in place, parameters without a gradient skipped."""

import pytest
import torch

from cs336_harness import probes
from cs336_harness.compare import assert_matches_oracle
from tests.tolerances import GRADIENT_CLIPPING

pytestmark = pytest.mark.family("gradient_clipping")


def test_gradient_clipping(case, adapters):
    p = case.params
    values = [case[f"value.{i}"] for i in range(p["count"])]
    grads = [case.tensors.get(f"grad.{i}") for i in range(p["count"])]
    out = probes.gradient_clipping(
        adapters, values=values, grads=grads, max_l2_norm=p["max_l2_norm"]
    )
    for i in p["without_grad"]:
        assert out["grads"][i] is None, (
            f"parameter {i} had no gradient (grad None) and must keep none after clipping"
        )
    for i, (before, after) in enumerate(zip(values, out["values"], strict=True)):
        assert torch.equal(before, after), f"clipping changed parameter {i}'s value, not its grad"
    clipped = torch.cat([g.reshape(-1) for g in out["grads"] if g is not None])
    assert_matches_oracle(
        clipped, case.expected, dtype=torch.float32, **GRADIENT_CLIPPING,
        what="the gradients after clipping (every parameter's, flattened in order)",
    )  # fmt: skip
