"""RMSNorm computed in the input's dtype: float16 squares overflow, bfloat16 sums round."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "rmsnorm_in_half_precision"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weights.to(x.dtype)
