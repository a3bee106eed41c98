"""RMSNorm that ignores its eps argument and adds a hard-coded 1e-6, in every norm: the
RMSNorm adapter, the block's and the model's (whose eps is the contract's 1e-5). Against a
mean square far above both it is invisible; the block's small input and the deep model's small
embeddings show it."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters, rmsnorm

CAUGHT_BY = frozenset(
    {"rmsnorm", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "rmsnorm_eps_ignored_1e_6"


def _norm(x, gain, eps=1e-5):
    return rmsnorm(x, gain, 1e-6)


_adapters = PartsAdapters(Parts(norm=_norm))
run_rmsnorm = _adapters.run_rmsnorm
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
