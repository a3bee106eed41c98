"""RMSNorm that adds its gain to the normalised input instead of multiplying by it."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "rmsnorm_gain_added"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) + weights).to(in_features.dtype)
