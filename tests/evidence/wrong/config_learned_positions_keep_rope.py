"""A model with learned position embeddings whose attention applies RoPE as well."""

import torch

from cs336_basics import TransformerLM
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"transformer_lm_from_config"})
DIAGNOSED_AS = "config_learned_positions_keep_rope"


def run_transformer_lm_from_config(config, weights, in_indices):
    dtype = weights["token_embeddings.weight"].dtype
    model = TransformerLM.from_config(config, dtype=dtype)
    if config.get("positions") == "learned":
        with_rope = {k: v for k, v in config.items() if k != "remove_rope"}
        model.layers = TransformerLM.from_config(
            with_rope | {"positions": "rope"}, dtype=dtype
        ).layers
    model.load_state_dict(weights)
    model.eval()
    with torch.no_grad():
        return model(in_indices)
