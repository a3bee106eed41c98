"""Heads taken as strided rows (h, h+H, ...) of the projections instead of blocks."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, mha

CAUGHT_BY = frozenset({"multihead_self_attention", "multihead_self_attention_with_rope"})


def run_multihead_self_attention(
    d_model, num_heads, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, in_features
):
    w = {
        "q_proj.weight": q_proj_weight,
        "k_proj.weight": k_proj_weight,
        "v_proj.weight": v_proj_weight,
        "output_proj.weight": o_proj_weight,
    }
    return mha(in_features, w, num_heads, m=Mistakes(strided_heads=True))


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
    return mha(in_features, w, num_heads, theta, token_positions, m=Mistakes(strided_heads=True))
