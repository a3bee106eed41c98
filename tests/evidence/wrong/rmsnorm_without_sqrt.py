"""RMSNorm dividing by the mean square, mean(x²) + eps, having left out the square root."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
DIAGNOSED_AS = "rmsnorm_without_sqrt"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    return (x / (x.pow(2).mean(-1, keepdim=True) + eps) * weights).to(in_features.dtype)
