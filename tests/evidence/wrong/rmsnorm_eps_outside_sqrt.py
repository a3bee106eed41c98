"""RMSNorm dividing by sqrt(mean(x²)) + eps instead of sqrt(mean(x²) + eps)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "rmsnorm_eps_outside_sqrt"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    rms = x.pow(2).mean(-1, keepdim=True).sqrt()
    return (x / (rms + eps) * weights).to(in_features.dtype)
