"""Attention scores without the 1/sqrt(d_k) scale."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, attention

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    return attention(Q, K, V, mask, Mistakes(attention_scale="none"))
