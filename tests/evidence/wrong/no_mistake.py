"""The mistake model with every switch off: a control that must pass every family.

It shows that each other module here fails because of its one mistake, not because of
the model they share."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset()
_adapters = MistakenAdapters(Mistakes())
run_rope = _adapters.run_rope
run_scaled_dot_product_attention = _adapters.run_scaled_dot_product_attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
