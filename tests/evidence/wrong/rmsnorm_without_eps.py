"""RMSNorm without eps: x / sqrt(mean(x²)), which the eps_0.01 and small-magnitude cases see."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "rmsnorm_without_eps"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) * weights).to(in_features.dtype)
