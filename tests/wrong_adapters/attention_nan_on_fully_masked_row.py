"""Masked scores filled with -inf, so a query that may attend nothing gets NaN, not 0."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, attention

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    return attention(Q, K, V, mask, Mistakes(nan_on_fully_masked_rows=True))
