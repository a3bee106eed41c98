"""The model of replaceable parts with every part correct: a control that must pass every
family, so each module built on it fails because of the part it replaces."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset()
_adapters = PartsAdapters(Parts())
run_rmsnorm = _adapters.run_rmsnorm
run_swiglu = _adapters.run_swiglu
run_embedding = _adapters.run_embedding
run_rope = _adapters.run_rope
run_scaled_dot_product_attention = _adapters.run_scaled_dot_product_attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
