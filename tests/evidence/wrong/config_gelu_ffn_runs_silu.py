"""A config reader that builds a SiLU feed-forward where the config asks for GELU (both have
w1 and w2 only, so the weights load)."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_transformer_lm_from_config as correct_lm_from_config

CAUGHT_BY = frozenset({"transformer_lm_from_config"})
DIAGNOSED_AS = "config_gelu_ffn_runs_silu"


def run_transformer_lm_from_config(config, weights, in_indices):
    if config.get("ffn") == "gelu":
        config = {k: v for k, v in config.items() if k != "gelu_approximate"} | {"ffn": "silu"}
    return correct_lm_from_config(config, weights, in_indices)
