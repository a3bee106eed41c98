"""Gradient clipping: every gradient scaled by max / (‖g‖ + 1e-6) when the global norm ‖g‖
of all of them together exceeds max; in place, parameters without a gradient skipped."""

import pytest
import torch

from cs336_harness.adapters.probes import training as probes
from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle

FAMILY = family("gradient_clipping")

pytestmark = pytest.mark.family("gradient_clipping")


def _parameters(case) -> tuple[list[torch.Tensor], list[torch.Tensor | None]]:
    """The case's parameter values and gradients (None: the parameter has no gradient)."""
    count = case.params["count"]
    return [case[f"value.{i}"] for i in range(count)], [
        case.tensors.get(f"grad.{i}") for i in range(count)
    ]


def test_gradient_clipping(case, adapters):
    p = case.params
    values, grads = _parameters(case)
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
        clipped, case.expected, dtype=torch.float32, **FAMILY.tolerance,
        what="the gradients after clipping (every parameter's, flattened in order)",
    )  # fmt: skip


@pytest.mark.hardening(
    "upstream's tests pass a tuple of parameters; a generator is a call they never make"
)
def test_gradient_clipping_given_a_generator(case, adapters):
    """The parameters handed over as a generator, as `model.parameters()` is: a clipper that
    iterates them twice (once for the norm, once to scale) finds nothing the second time."""
    p = case.params
    values, grads = _parameters(case)
    out = probes.gradient_clipping(
        adapters, values=values, grads=grads, max_l2_norm=p["max_l2_norm"], as_generator=True
    )
    after = [g for g in out["grads"] if g is not None]
    before = [g for g in grads if g is not None]
    clipped = torch.cat([g.reshape(-1) for g in after])
    untouched = len(after) == len(before) and all(map(torch.equal, after, before))
    if untouched and not torch.equal(clipped.cpu(), case.expected):
        pytest.fail(
            "given the parameters as a generator (as model.parameters() is), no gradient was "
            "clipped: is `parameters` iterated twice? A generator is empty the second time; "
            "make it a list first (params = list(parameters))",
            pytrace=False,
        )
    assert_matches_oracle(
        clipped, case.expected, dtype=torch.float32, **FAMILY.tolerance,
        what="the gradients after clipping parameters given as a generator",
    )  # fmt: skip
