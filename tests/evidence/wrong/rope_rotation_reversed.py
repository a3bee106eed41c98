"""RoPE turning each pair the wrong way, (a cos + b sin, −a sin + b cos), in RoPE and
everywhere it is used: attention with RoPE, the block and the model. In attention its output
is that of cos and sin swapped (`rope_cos_sin_swapped`): one output under two names there,
where the RoPE family's own failures say which is meant."""

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
DIAGNOSED_AS = "rope_rotation_reversed"
_adapters = PartsAdapters(Parts(rope=partial(rope, reverse=True)))
run_rope = _adapters.run_rope
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
