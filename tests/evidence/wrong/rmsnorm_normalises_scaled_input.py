"""RMSNorm that multiplies by the gain first and normalises the product, (x · g) / RMS(x · g):
in the norm itself and in every norm of the block and the model."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {"rmsnorm", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "rmsnorm_normalises_scaled_input"


def _norm(x, gain, eps=1e-5):
    y = x.float() * gain
    return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


_adapters = PartsAdapters(Parts(norm=_norm))
run_rmsnorm = _adapters.run_rmsnorm
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
