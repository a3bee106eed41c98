"""RoPE with cos and sin swapped, (a sin − b cos, a cos + b sin), in RoPE and everywhere it is
used: attention with RoPE, the block and the model."""

from functools import partial

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters, rope

CAUGHT_BY = frozenset(
    {
        "rope",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "rope_cos_sin_swapped"
_adapters = PartsAdapters(Parts(rope=partial(rope, swap=True)))
run_rope = _adapters.run_rope
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
