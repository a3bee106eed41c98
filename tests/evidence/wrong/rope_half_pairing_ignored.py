"""A config-built model that always pairs RoPE dims interleaved, even when the config asks
for the "rotate half" pairing."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_transformer_lm_from_config as correct_lm_from_config

CAUGHT_BY = frozenset({"transformer_lm_from_config"})
DIAGNOSED_AS = "config_rope_pairing_ignored"


def run_transformer_lm_from_config(config, weights, in_indices):
    interleaved = {key: value for key, value in config.items() if key != "rope_pairing"}
    return correct_lm_from_config(interleaved, weights, in_indices)
