"""A block that adds each residual to the sublayer's normalised input,
h = ln1(x) + attn(ln1(x)), out = ln2(h) + ffn(ln2(h)), in the block and every layer of the
model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset({"transformer_block", "transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "block_residual_from_normalised_input"
_adapters = PartsAdapters(Parts(normalised_stream=True))
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
