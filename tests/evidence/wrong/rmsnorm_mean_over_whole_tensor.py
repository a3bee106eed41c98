"""RMSNorm whose mean of squares is taken over the whole tensor (`x.pow(2).mean()`, no dim),
so every vector is divided by one shared RMS."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "rmsnorm_mean_over_whole_tensor"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    return (x * torch.rsqrt(x.pow(2).mean() + eps) * weights).to(in_features.dtype)
