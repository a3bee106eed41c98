"""A block whose feed-forward reads ln2 of the attention's output, without the residual, in
the block and in every layer of the language model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

CAUGHT_BY = frozenset({"transformer_block", "transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "block_ffn_reads_attention_output"
_adapters = AssembledAdapters(Assembly(ffn_reads="attn"))
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
