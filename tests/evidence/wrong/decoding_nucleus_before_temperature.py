"""nucleus chosen on the untempered distribution, then sampled at the temperature."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._decoding_mistakes import sample_with

CAUGHT_BY = frozenset({"decoding"})


def run_sample_next_token(logits, temperature, top_p, seed):
    return sample_with(logits, temperature, top_p, seed, "nucleus_before_temperature")
