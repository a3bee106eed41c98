"""Attention scores without the 1/sqrt(d_k) scale."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
DIAGNOSED_AS = "attention_unscaled"
_adapters = MistakenAdapters(Mistakes(attention_scale="none"))
run_scaled_dot_product_attention = _adapters.run_scaled_dot_product_attention
