"""A language model that left-pads short inputs to the full context with token 0: the
padding leaks into attention, so only inputs shorter than the context go wrong."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.wrong_adapters._mistakes import Mistakes, lm

CAUGHT_BY = frozenset({"transformer_lm_truncated_input"})


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
        Mistakes(pad_to_context=True),
    )
