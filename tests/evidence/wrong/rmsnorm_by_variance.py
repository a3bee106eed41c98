"""RMSNorm that divides by sqrt(x.var(-1) + eps), torch's variance (centred, over
d_model - 1), where the mean square belongs: in the norm itself and in every norm of the
block and the model."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {"rmsnorm", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "rmsnorm_by_variance"


def _norm(x, gain, eps=1e-5):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.var(-1, keepdim=True) + eps) * gain).to(x.dtype)


_adapters = PartsAdapters(Parts(norm=_norm))
run_rmsnorm = _adapters.run_rmsnorm
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
