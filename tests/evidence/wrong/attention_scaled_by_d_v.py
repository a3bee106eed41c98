"""Attention scores scaled by 1/sqrt(d_v): right only when d_v = d_k."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
DIAGNOSED_AS = "attention_scaled_by_d_v"
_adapters = MistakenAdapters(Mistakes(attention_scale="d_v"))
run_scaled_dot_product_attention = _adapters.run_scaled_dot_product_attention
