"""A block without the residual around the feed-forward, out = ffn(ln2(h)), in the block and
in every layer of the language model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

CAUGHT_BY = frozenset({"transformer_block", "transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "block_ffn_residual_dropped"
_adapters = AssembledAdapters(Assembly(ffn_residual=False))
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
