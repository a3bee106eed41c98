"""Upstream's shape: the block's attention has no causal mask, in the block and in every
layer of the LM, while `run_multihead_self_attention_with_rope` is right; the adapters are
upstream's handout's alone. The failure message must name the attention half of the block
(tests/meta/test_meta_first_difference.py)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

del get_transformer_block, get_transformer_lm  # noqa: F821  (upstream's handout has neither)

CAUGHT_BY = frozenset({
    "transformer_block", "transformer_lm", "transformer_lm_truncated_input",
    "transformer_lm_module", "transformer_block_module",
})  # fmt: skip
DIAGNOSED_AS = "attention_not_causal"
FIRST_DIFFERENCE = {
    "transformer_block": "the attention half differs",
    "transformer_lm": "first difference: layers.0: run_transformer_block on the oracle's input "
    "of layers.0 departs from its output",
}
_adapters = AssembledAdapters(Assembly(causal=False))
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
