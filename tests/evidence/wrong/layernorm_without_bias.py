"""LayerNorm that never adds its bias (shift)."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"layernorm"})
DIAGNOSED_AS = "layernorm_without_bias"


def run_layernorm(d_model, eps, weights, biases, in_features):
    x = in_features.float()
    centred = x - x.mean(-1, keepdim=True)
    var = centred.pow(2).mean(-1, keepdim=True)
    return (centred * torch.rsqrt(var + eps) * weights).to(in_features.dtype)
