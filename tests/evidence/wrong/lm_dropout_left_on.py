"""A config-built model run in training mode: where the config has dropout rates, dropout
stays on at evaluation."""

import torch

from cs336_basics import TransformerLM
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"transformer_lm_from_config"})


def run_transformer_lm_from_config(config, weights, in_indices):
    model = TransformerLM.from_config(config, dtype=weights["token_embeddings.weight"].dtype)
    model.load_state_dict(weights)  # the mistake: no model.eval()
    with torch.no_grad():
        return model(in_indices)
