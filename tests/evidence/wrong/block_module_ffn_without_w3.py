"""The block's FFN is w2(silu(w1 x)), never using w3, in the module that both
`get_transformer_block` and `run_transformer_block` build; the failure message must name
ffn."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._module_mistakes import MistakenModules, ffn_without_w3

CAUGHT_BY = frozenset({"transformer_block"})
DIAGNOSED_AS = "swiglu_without_w3"
# What the failure of each family's output test must say
# (tests/meta/test_meta_first_difference.py).
FIRST_DIFFERENCE = {"transformer_block": "first difference: ffn (its input matched;"}
_modules = MistakenModules(ffn_without_w3)
get_transformer_block = _modules.get_transformer_block
run_transformer_block = _modules.run_transformer_block
