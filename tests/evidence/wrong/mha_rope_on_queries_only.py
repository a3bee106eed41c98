"""Multi-head attention that rotates the queries with RoPE but not the keys."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"multihead_self_attention_with_rope"})
DIAGNOSED_AS = "rope_on_queries_only"
_adapters = MistakenAdapters(Mistakes(rope_on_keys=False))
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
