"""RoPE's cos/sin tables are persistent buffers: state_dict holds them, so the reference
weights (which have none) load only non-strictly."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._module_mistakes import MistakenModules, rope_tables_persistent

CAUGHT_BY = frozenset({"transformer_lm_module", "transformer_block_module"})
_modules = MistakenModules(rope_tables_persistent)
get_transformer_lm = _modules.get_transformer_lm
get_transformer_block = _modules.get_transformer_block
