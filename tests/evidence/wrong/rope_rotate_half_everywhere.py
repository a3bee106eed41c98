"""RoPE with "rotate half" pairing in every component that uses it: RoPE itself, attention
with RoPE, the block and the model (a submission whose one RoPE module is wrong)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset(
    {
        "rope",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "rope_rotate_half"
_adapters = MistakenAdapters(Mistakes(rope_pairing="half"))
run_rope = _adapters.run_rope
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
