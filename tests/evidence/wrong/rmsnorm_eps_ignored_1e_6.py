"""RMSNorm that ignores its eps argument and adds a hard-coded 1e-6."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "rmsnorm_eps_ignored_1e_6"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weights).to(in_features.dtype)
