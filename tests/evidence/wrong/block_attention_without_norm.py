"""A block whose attention reads the block's input without ln1, h = x + attn(x) (the
feed-forward's ln2 kept), in the block and in every layer of the language model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset({"transformer_block", "transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "block_attention_without_norm"
_adapters = PartsAdapters(Parts(attention_norm=False))
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
