"""RMSNorm whose normaliser is detached (`rms.detach()`): the same output, but the gradient
misses the term through rms(x), a quarter of it at d_model 16."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features.float()
    rms = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    return (x / rms.detach() * weights).to(in_features.dtype)
