"""RoPE that takes the first sequence's token positions for the whole batch (as if every
sequence started at the same place): right for a (seq,) positions tensor, wrong for the
other rows of a batched one."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_multihead_self_attention_with_rope as _correct_attention
from tests.adapters import run_rope as _correct_rope

CAUGHT_BY = frozenset({"rope", "multihead_self_attention_with_rope"})
ERROR_SHAPE = "some_indices"


def _first_row(positions, seq):
    return positions.reshape(-1, seq)[0]


def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
    positions = _first_row(token_positions, in_query_or_key.shape[-2])
    return _correct_rope(d_k, theta, max_seq_len, in_query_or_key, positions)


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
    if token_positions is not None:
        token_positions = _first_row(token_positions, in_features.shape[-2])
    return _correct_attention(
        d_model, num_heads, max_seq_len, theta, q_proj_weight, k_proj_weight,
        v_proj_weight, o_proj_weight, in_features, token_positions,
    )  # fmt: skip
