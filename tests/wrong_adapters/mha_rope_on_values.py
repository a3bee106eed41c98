"""RoPE applied to the values as well as the queries and keys."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, mha

CAUGHT_BY = frozenset({"multihead_self_attention_with_rope"})


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
    return mha(in_features, w, num_heads, theta, token_positions, m=Mistakes(rope_on_values=True))
