"""Multi-head attention that rotates the keys with RoPE but not the queries."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"multihead_self_attention_with_rope"})
DIAGNOSED_AS = "rope_on_keys_only"
_adapters = MistakenAdapters(Mistakes(rope_on_queries=False))
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
