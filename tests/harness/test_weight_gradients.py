"""The gradient a weight receives, found wherever the adapter keeps its values (the probe
`input_gradients`): as given, transposed, fused with others into one parameter, or split
into one parameter per head, each a correct way to build a layer from the weights."""

from __future__ import annotations

from types import ModuleType

import pytest
import torch

from cs336_harness.adapters.probes.registry import run_probe

HEADS = 4


def _adapters(store: str) -> ModuleType:
    """A module whose `run_linear` computes `x Wᵀ` from parameters holding W as `store`
    says; every way gives W's gradient as `x`'s outer product with the projection."""

    def run_linear(d_in, d_out, weights, in_features):
        if store == "per_head":  # one Linear per head, each a block of W's rows
            rows = torch.nn.ParameterList(w.detach().clone() for w in weights.chunk(HEADS))
            return torch.cat([in_features @ r.T for r in rows], dim=-1)
        if store == "per_head_transposed":  # the same, each stored for x @ W
            cols = torch.nn.ParameterList(w.detach().T.clone() for w in weights.chunk(HEADS))
            return torch.cat([in_features @ c for c in cols], dim=-1)
        fused = torch.nn.Parameter(torch.cat([weights.detach(), torch.ones_like(weights)]))
        return (in_features @ fused.T)[..., :d_out]

    module = ModuleType(f"adapters_{store}")
    module.run_linear = run_linear  # type: ignore[attr-defined]
    return module


@pytest.mark.parametrize("store", ["per_head", "per_head_transposed", "fused"])
def test_a_weight_s_gradient_is_found_however_the_adapter_holds_it(store: str):
    generator = torch.Generator().manual_seed(0)
    x, w = torch.randn(3, 5, generator=generator), torch.randn(8, 5, generator=generator)
    projection = torch.randn(3, 8, generator=generator)
    kwargs = {"d_in": 5, "d_out": 8, "weights": w, "in_features": x}
    result = run_probe(_adapters(store), "input_gradients", {
        "adapter": "run_linear", "kwargs": kwargs, "differentiable": ["in_features"],
        "projection": projection, "parameters": [["weights", None]],
    })  # fmt: skip
    [gradient] = result["parameter_grads"]
    # d(sum(P ⊙ x Wᵀ))/dW = Pᵀ x: a product of a few float32 terms, rounded alike.
    torch.testing.assert_close(gradient, projection.T @ x, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(result["grads"]["in_features"], projection @ w)
