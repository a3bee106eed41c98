"""Attention called with the keys and the values exchanged, softmax(Q Vᵀ / √d_k) K: in
attention (where d_v ≠ d_k it fails on the shapes) and in multi-head attention, whose
value projection then serves as keys."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_multihead_self_attention as _correct_mha
from tests.adapters import run_scaled_dot_product_attention as _correct_attention

CAUGHT_BY = frozenset({"scaled_dot_product_attention", "multihead_self_attention"})
DIAGNOSED_AS = "attention_keys_values_swapped"


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    return _correct_attention(Q, V, K, mask)


def run_multihead_self_attention(
    d_model, num_heads, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, in_features
):
    return _correct_mha(
        d_model, num_heads, q_proj_weight, v_proj_weight, k_proj_weight, o_proj_weight, in_features
    )
