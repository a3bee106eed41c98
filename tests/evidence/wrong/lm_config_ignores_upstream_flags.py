"""A config reader that knows only this harness's keys and drops the upstream ablation flags
(remove_rmsnorm, use_post_norm, remove_rope, ffn_type), so those ablations build the
default model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_transformer_lm_from_config as correct_lm_from_config

CAUGHT_BY = frozenset({"transformer_lm_from_config"})

UPSTREAM_FLAGS = ("remove_rmsnorm", "use_post_norm", "remove_rope", "ffn_type")


def run_transformer_lm_from_config(config, weights, in_indices):
    ours = {key: value for key, value in config.items() if key not in UPSTREAM_FLAGS}
    return correct_lm_from_config(ours, weights, in_indices)
