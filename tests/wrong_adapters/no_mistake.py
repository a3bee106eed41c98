"""The mistake model with every switch off: a control that must pass every family.

It shows that each other module here fails because of its one mistake, not because of
the model they share."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import NONE, attention, block, lm, mha, rope

CAUGHT_BY = frozenset()


def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
    return rope(in_query_or_key, token_positions, theta, NONE)


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    return attention(Q, K, V, mask, NONE)


def run_multihead_self_attention(
    d_model, num_heads, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, in_features
):
    w = {
        "q_proj.weight": q_proj_weight,
        "k_proj.weight": k_proj_weight,
        "v_proj.weight": v_proj_weight,
        "output_proj.weight": o_proj_weight,
    }
    return mha(in_features, w, num_heads, m=NONE)


def run_multihead_self_attention_with_rope(
    d_model,
    num_heads,
    max_seq_len,
    theta,
    q_proj_weight,
    k_proj_weight,
    v_proj_weight,
    o_proj_weight,
    in_features,
    token_positions=None,
):
    w = {
        "q_proj.weight": q_proj_weight,
        "k_proj.weight": k_proj_weight,
        "v_proj.weight": v_proj_weight,
        "output_proj.weight": o_proj_weight,
    }
    return mha(in_features, w, num_heads, theta, token_positions, m=NONE)


def run_transformer_block(d_model, num_heads, d_ff, max_seq_len, theta, weights, in_features):
    return block(in_features, weights, num_heads, theta, NONE)


def run_transformer_lm(
    vocab_size,
    context_length,
    d_model,
    num_layers,
    num_heads,
    d_ff,
    rope_theta,
    weights,
    in_indices,
):
    return lm(in_indices, weights, num_layers, num_heads, rope_theta, context_length, NONE)
