"""A block that normalises each sublayer's output before the residual adds it,
h = x + ln1(attn(x)), out = h + ln2(ffn(h)), where the sublayers should read the normalised
stream; in the block and in every layer of the language model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

CAUGHT_BY = frozenset({"transformer_block", "transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "block_norm_on_sublayer_output"
_adapters = AssembledAdapters(Assembly(norm_on_sublayer_output=True))
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
