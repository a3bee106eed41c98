"""RMSNorm that takes the mean of x² over dim=1: right for a (n, d_model) input, over the
sequence for a (batch, seq, d_model) one."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "rmsnorm_mean_over_dim_1"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    return (x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + eps) * weights).to(in_features.dtype)
