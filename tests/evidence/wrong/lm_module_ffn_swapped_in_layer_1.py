"""Layer 1's FFN trades the gate for the value, w2(silu(w3 x) * w1 x), in the module that
both `get_transformer_lm` and `run_transformer_lm` build; every other sublayer is right, and
the failure message must name layers.1.ffn."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._module_mistakes import MistakenModules, ffn_gate_and_value_swapped

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input", "transformer_lm_module"})
# What the failure of each family's output test must say
# (tests/meta/test_meta_first_difference.py).
FIRST_DIFFERENCE = {"transformer_lm": "first difference: layers.1.ffn (its input matched;"}
_modules = MistakenModules(ffn_gate_and_value_swapped, layers={1})
get_transformer_lm = _modules.get_transformer_lm
run_transformer_lm = _modules.run_transformer_lm
