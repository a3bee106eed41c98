"""The gradient probe and autograd's mode: an adapter's `torch.no_grad()` around its model is
glue and passes; a module that switches autograd off in its own forward, or detaches, fails."""

from __future__ import annotations

from types import ModuleType

import pytest
import torch

from cs336_harness.adapters.probes.registry import run_probe


class Scale(torch.nn.Module):
    """y = x · w, elementwise: d(sum(P ⊙ y))/dx = P ⊙ w, and /dw = sum over rows of P ⊙ x."""

    def __init__(self, weight: torch.Tensor, no_grad_inside: bool = False):
        super().__init__()
        self.weight = torch.nn.Parameter(weight.detach().clone())
        self.no_grad_inside = no_grad_inside

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.no_grad_inside:
            with torch.no_grad():
                return x * self.weight
        return x * self.weight


def _adapters(how: str) -> ModuleType:
    def run_rmsnorm(d_model, eps, weights, in_features):
        module = Scale(weights, no_grad_inside=how == "module_no_grad")
        if how == "adapter_no_grad":
            with torch.no_grad():
                return module(in_features)
        if how == "detached_after":
            return module(in_features).detach()
        return module(in_features)

    adapters = ModuleType(f"adapters_{how}")
    adapters.run_rmsnorm = run_rmsnorm  # type: ignore[attr-defined]
    return adapters


def _gradients(how: str) -> tuple[dict, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x, w = torch.randn(3, 4, generator=generator), torch.randn(4, generator=generator)
    projection = torch.randn(3, 4, generator=generator)
    kwargs = {"d_model": 4, "eps": 1e-5, "weights": w, "in_features": x}
    result = run_probe(_adapters(how), "input_gradients", {
        "adapter": "run_rmsnorm", "kwargs": kwargs, "differentiable": ["in_features"],
        "projection": projection, "parameters": [["weights", None]],
    })  # fmt: skip
    return result, x, w, projection


@pytest.mark.parametrize("how", ["plain", "adapter_no_grad"])
def test_an_adapter_may_run_its_model_under_no_grad(how: str):
    result, x, w, projection = _gradients(how)
    # One product per element, rounded alike on both sides: exact.
    torch.testing.assert_close(result["grads"]["in_features"], projection * w, rtol=0, atol=0)
    torch.testing.assert_close(
        result["parameter_grads"][0], (projection * x).sum(0), rtol=1e-6, atol=1e-6
    )
    assert torch.is_grad_enabled()


@pytest.mark.parametrize("how", ["module_no_grad", "detached_after"])
def test_a_module_or_adapter_that_cuts_the_graph_itself_is_caught(how: str):
    result, *_ = _gradients(how)
    assert "does not require grad" in result["detached"]
    assert torch.is_grad_enabled()
