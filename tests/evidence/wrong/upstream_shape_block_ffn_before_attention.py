"""Upstream's shape: the block runs its FFN before its attention, g = x + ffn(ln2(x)),
out = g + attn(ln1(g)), in the block and in every layer of the LM; the adapters are
upstream's handout's alone. Every sublayer and each half of the block are right alone: the
failure message must name the order (tests/meta/test_meta_first_difference.py)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

del get_transformer_block, get_transformer_lm  # noqa: F821  (upstream's handout has neither)

CAUGHT_BY = frozenset({
    "transformer_block", "transformer_lm", "transformer_lm_truncated_input",
    "transformer_lm_module", "transformer_block_module",
})  # fmt: skip
FIRST_DIFFERENCE = {
    "transformer_block": "the halves are joined otherwise, in another order",
    "transformer_lm": "the halves are joined otherwise, in another order",
}
_adapters = AssembledAdapters(Assembly(ffn_first=True))
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
