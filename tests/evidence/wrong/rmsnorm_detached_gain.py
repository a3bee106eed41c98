"""An RMSNorm that scales by `self.weight.detach()`: the same output and input gradient, but
no gradient reaches the gain, which stays at its initial value in training."""

import torch

from cs336_basics import RMSNorm
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})


class _DetachedGainRMSNorm(RMSNorm):
    def forward(self, x):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (normed * self.weight.detach()).to(x.dtype)


def run_rmsnorm(d_model, eps, weights, in_features):
    norm = _DetachedGainRMSNorm(d_model, eps, device=in_features.device, dtype=weights.dtype)
    norm.load_state_dict({"weight": weights})
    return norm(in_features)
