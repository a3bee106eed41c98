"""Layer 1's attention has no causal mask, in the module that both `get_transformer_lm` and
`run_transformer_lm` build; the failure message must name layers.1.attn. (Layer 1, not 0: a
one-layer model without a causal mask is the known mistake `attention_not_causal`, which the
diagnosis would rightly name.)"""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._module_mistakes import MistakenModules, attention_not_causal

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input", "transformer_lm_module"})
# What the failure of each family's output test must say
# (tests/meta/test_meta_first_difference.py).
FIRST_DIFFERENCE = {"transformer_lm": "first difference: layers.1.attn (its input matched;"}
_modules = MistakenModules(attention_not_causal, layers={1})
get_transformer_lm = _modules.get_transformer_lm
run_transformer_lm = _modules.run_transformer_lm
