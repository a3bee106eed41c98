"""RMSNorm that divides by rsqrt(mean(x²)) + eps, the reciprocal of the RMS, where it should
multiply by rsqrt(mean(x²) + eps) (a student's `x / x.pow(2).mean(-1).rsqrt().add(eps)`)."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "rmsnorm_divides_by_rsqrt"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    inverse_rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True))
    return (x / (inverse_rms + eps) * weights).to(in_features.dtype)
