"""RMSNorm dividing by the mean absolute value, mean(|x|) + eps, instead of the root mean
square sqrt(mean(x²) + eps)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})
ERROR_SHAPE = "row_factor"


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    return (x / (x.abs().mean(-1, keepdim=True) + eps) * weights).to(in_features.dtype)
