"""Attention called with the keys and the values exchanged, softmax(Q Vᵀ / √d_k) K: in
attention (where d_v ≠ d_k it fails on the shapes) and everywhere it is used, where the
(unrotated) values then serve as keys and the (rotated) keys as values."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_scaled_dot_product_attention as _correct_attention
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {
        "scaled_dot_product_attention",
        "multihead_self_attention",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "attention_keys_values_swapped"


def _attention(Q, K, V, mask=None):
    return _correct_attention(Q, V, K, mask)


_adapters = PartsAdapters(Parts(attention=_attention))
run_scaled_dot_product_attention = _attention
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
