"""RoPE's cos/sin tables are plain tensor attributes: right on the CPU, but model.to(device)
leaves them behind (only the hardening test fails)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._module_mistakes import MistakenModules, rope_tables_plain

CAUGHT_BY = frozenset({"transformer_lm_module", "transformer_block_module"})
_modules = MistakenModules(rope_tables_plain)
get_transformer_lm = _modules.get_transformer_lm
get_transformer_block = _modules.get_transformer_block
