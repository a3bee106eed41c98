"""A language model that reads the output head from token_embeddings (tied) when the
weights give it its own lm_head."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, lm

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})


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
    return lm(
        in_indices,
        weights,
        num_layers,
        num_heads,
        rope_theta,
        context_length,
        Mistakes(tied_head=True),
    )
