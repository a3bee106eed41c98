"""Each block's attention has a learnable temperature the SPEC does not: a parameter too many,
so the reference weights do not load strictly."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._module_mistakes import MistakenModules, extra_parameter

CAUGHT_BY = frozenset({"transformer_lm_module", "transformer_block_module"})
_modules = MistakenModules(extra_parameter)
get_transformer_lm = _modules.get_transformer_lm
get_transformer_block = _modules.get_transformer_block
