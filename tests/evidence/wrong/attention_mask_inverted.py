"""Attention that drops the keys where the mask is True, instead of keeping them."""

from tests import adapters
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
DIAGNOSED_AS = "attention_mask_inverted"


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    return adapters.run_scaled_dot_product_attention(Q, K, V, None if mask is None else ~mask)
