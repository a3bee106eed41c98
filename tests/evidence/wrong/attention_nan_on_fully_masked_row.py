"""Masked scores filled with -inf, so a query that may attend nothing gets NaN, not 0."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
DIAGNOSED_AS = "attention_nan_on_fully_masked_row"
_adapters = MistakenAdapters(Mistakes(nan_on_fully_masked_rows=True))
run_scaled_dot_product_attention = _adapters.run_scaled_dot_product_attention
