"""RoPE with Θ hard-coded to 10000 in every component that uses it: RoPE itself, attention
with RoPE, the block and the model."""

from tests import adapters
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset(
    {
        "rope",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "rope_theta_fixed"
THETA = 10000.0


def run_rope(d_k, **kwargs):
    return adapters.run_rope(d_k, **kwargs | {"theta": THETA})


def run_multihead_self_attention_with_rope(**kwargs):
    return adapters.run_multihead_self_attention_with_rope(**kwargs | {"theta": THETA})


def run_transformer_block(**kwargs):
    return adapters.run_transformer_block(**kwargs | {"theta": THETA})


def run_transformer_lm(**kwargs):
    return adapters.run_transformer_lm(**kwargs | {"rope_theta": THETA})
