"""An RMSNorm that divides its input by the root mean square in place (`x /= rms`): the
right output, but the caller's tensor (in a block, the residual stream) is normalised too."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rmsnorm"})


def run_rmsnorm(d_model, eps, weights, in_features):
    x = in_features
    if x.dtype == weights.dtype:
        x /= (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
        return x * weights
    x32 = x.float()
    return (x32 / (x32.pow(2).mean(-1, keepdim=True) + eps).sqrt() * weights).to(x.dtype)
