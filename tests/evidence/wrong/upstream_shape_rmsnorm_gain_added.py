"""Upstream's shape: RMSNorm adds its gain, in `run_rmsnorm` and in every norm of the block
and the LM (one RMSNorm, used everywhere), and the adapters are upstream's handout's alone
(no `get_transformer_block` / `get_transformer_lm`). The failure message must name ln1, the
first stage whose component adapter departs on the oracle's input
(tests/meta/test_meta_first_difference.py)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly, rmsnorm_gain_added

del get_transformer_block, get_transformer_lm  # noqa: F821  (upstream's handout has neither)

# Without the module adapters the module families are "not implemented".
CAUGHT_BY = frozenset({
    "rmsnorm", "transformer_block", "transformer_lm", "transformer_lm_truncated_input",
    "transformer_lm_module", "transformer_block_module",
})  # fmt: skip
DIAGNOSED_AS = "rmsnorm_gain_added"
FIRST_DIFFERENCE = {
    "transformer_block": "first difference: ln1: run_rmsnorm, given the oracle's input of ln1",
    "transformer_lm": "first difference: layers.0.ln1: run_rmsnorm, given the oracle's input",
}
_adapters = AssembledAdapters(Assembly(norm_gain_added=True))
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm


def run_rmsnorm(d_model, eps, weights, in_features):
    return rmsnorm_gain_added(in_features, weights, eps)
