"""LayerNorm dividing x itself by the standard deviation: the variance is centred, but the
mean is not subtracted from x."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"layernorm"})
DIAGNOSED_AS = "layernorm_not_centred"


def run_layernorm(d_model, eps, weights, biases, in_features):
    x = in_features.float()
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x * torch.rsqrt(var + eps) * weights + biases).to(in_features.dtype)
