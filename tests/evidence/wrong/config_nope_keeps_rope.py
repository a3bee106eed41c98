"""A config reader for which a model without positions (positions "none", or the upstream
remove_rope) still has RoPE in its attention."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_transformer_lm_from_config as correct_lm_from_config

CAUGHT_BY = frozenset({"transformer_lm_from_config"})
DIAGNOSED_AS = "config_nope_keeps_rope"


def run_transformer_lm_from_config(config, weights, in_indices):
    config = {k: v for k, v in config.items() if k != "remove_rope"}
    if config.get("positions") == "none":
        config["positions"] = "rope"
    return correct_lm_from_config(config, weights, in_indices)
