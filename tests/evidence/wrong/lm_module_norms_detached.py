"""Every RMSNorm computes its normaliser outside autograd (`.detach()`): the logits are right
and only the parameter gradients are wrong."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._module_mistakes import MistakenModules, norms_detached

CAUGHT_BY = frozenset({"transformer_lm_module"})
_modules = MistakenModules(norms_detached)
get_transformer_lm = _modules.get_transformer_lm
