"""Multi-head attention without the causal mask: every query sees the future."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, mha

CAUGHT_BY = frozenset({"multihead_self_attention"})


def run_multihead_self_attention(
    d_model, num_heads, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, in_features
):
    w = {
        "q_proj.weight": q_proj_weight,
        "k_proj.weight": k_proj_weight,
        "v_proj.weight": v_proj_weight,
        "output_proj.weight": o_proj_weight,
    }
    return mha(in_features, w, num_heads, m=Mistakes(causal=False))
