"""Upstream's shape: the block has no residual around attention, h = attn(ln1(x)), in the
block and in every layer of the LM; the adapters are upstream's handout's alone. The failure
message must name the residual connections (tests/meta/test_meta_first_difference.py)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

del get_transformer_block, get_transformer_lm  # noqa: F821  (upstream's handout has neither)

CAUGHT_BY = frozenset({
    "transformer_block", "transformer_lm", "transformer_lm_truncated_input",
    "transformer_lm_module", "transformer_block_module",
})  # fmt: skip
DIAGNOSED_AS = "block_attention_residual_dropped"
FIRST_DIFFERENCE = {
    "transformer_block": "must return its input unchanged, and does not",
    "transformer_lm": "a residual connection is missing",
}
_adapters = AssembledAdapters(Assembly(attn_residual=False))
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
