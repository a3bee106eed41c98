"""Multi-head RoPE that ignores token_positions and uses 0..seq-1."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"multihead_self_attention_with_rope"})
DIAGNOSED_AS = "rope_ignores_positions"
_adapters = MistakenAdapters(Mistakes(ignore_positions=True))
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
