"""Layer 1 drops the residual connection around attention, h = attn(ln1(x)), in the module
that both `get_transformer_lm` and `run_transformer_lm` build: every sublayer is right, and
the failure message must say that layers.1.ln2's input is where the two part."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._module_mistakes import MistakenModules, attention_residual_dropped

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input", "transformer_lm_module"})
# What the failure of each family's output test must say
# (tests/meta/test_meta_first_difference.py).
FIRST_DIFFERENCE = {
    "transformer_lm": "first difference: the input of layers.1.ln2 (layers.1.ln1's input + "
    "layers.1.attn's output) already differs"
}
_modules = MistakenModules(attention_residual_dropped, layers={1})
get_transformer_lm = _modules.get_transformer_lm
run_transformer_lm = _modules.run_transformer_lm
