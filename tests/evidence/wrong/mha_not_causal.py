"""Multi-head attention without the causal mask: every query sees the future."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"multihead_self_attention"})
DIAGNOSED_AS = "attention_not_causal"
_adapters = MistakenAdapters(Mistakes(causal=False))
run_multihead_self_attention = _adapters.run_multihead_self_attention
