"""GELU's tanh approximation wherever the exact (erf) GELU is asked for: in the GELU and
feed-forward adapters and in config-built models with `ffn="gelu"`."""

import dataclasses

from cs336_basics import ModelConfig, gelu
from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_transformer_lm_from_config as correct_lm_from_config

CAUGHT_BY = frozenset({"gelu", "positionwise_feedforward", "transformer_lm_from_config"})
DIAGNOSED_AS = "gelu_tanh_for_exact"


def run_gelu(in_features, approximate="none"):
    return gelu(in_features, "tanh")


def run_positionwise_feedforward(d_model, d_ff, weights, in_features):
    x = in_features
    return gelu(x @ weights["w1.weight"].T, "tanh") @ weights["w2.weight"].T


def run_transformer_lm_from_config(config, weights, in_indices):
    resolved = ModelConfig.from_dict(config)
    if resolved.ffn == "gelu":
        resolved = dataclasses.replace(resolved, gelu_approximate="tanh")
    return correct_lm_from_config(resolved.to_dict(), weights, in_indices)
