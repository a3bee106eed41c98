"""RoPE applied to the values as well as the queries and keys."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"multihead_self_attention_with_rope"})
DIAGNOSED_AS = "rope_on_values"
_adapters = MistakenAdapters(Mistakes(rope_on_values=True))
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
