"""RMSNorm that upcasts to float32, as it should, and returns the float32 result for a
bfloat16 or float16 input instead of casting it back."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "output_left_in_wider_dtype"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weights.float()
