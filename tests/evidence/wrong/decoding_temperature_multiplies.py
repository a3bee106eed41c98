"""temperature applied as logits · τ instead of logits / τ."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._decoding_mistakes import sample_with

CAUGHT_BY = frozenset({"decoding"})


def run_sample_next_token(logits, temperature, top_p, seed):
    return sample_with(logits, temperature, top_p, seed, "temperature_multiplies")
