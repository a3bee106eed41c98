"""RoPE whose frequencies are Θ^(2k/d_k) instead of Θ^(-2k/d_k), in RoPE and everywhere it is
used."""

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
DIAGNOSED_AS = "rope_frequencies_inverted"
_adapters = PartsAdapters(
    Parts(rope=lambda x, positions, theta: rope(x, positions, theta, exponent=-2.0))
)
run_rope = _adapters.run_rope
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
