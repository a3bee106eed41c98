"""Heads taken as strided rows (h, h+H, ...) of the projections instead of blocks."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"multihead_self_attention", "multihead_self_attention_with_rope"})
DIAGNOSED_AS = "attention_heads_strided"
_adapters = MistakenAdapters(Mistakes(strided_heads=True))
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
