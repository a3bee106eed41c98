"""Learned position embeddings added to the output of the first block instead of to the
token embeddings."""

import torch

from cs336_basics import TransformerLM
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"transformer_lm_from_config"})
DIAGNOSED_AS = "learned_positions_after_first_block"


def run_transformer_lm_from_config(config, weights, in_indices):
    model = TransformerLM.from_config(config, dtype=weights["token_embeddings.weight"].dtype)
    model.load_state_dict(weights)
    model.eval()
    table, seq = model.position_embeddings, in_indices.shape[-1]
    if table is not None:
        # The model's own forward (and its checks) minus the input-side addition; the first
        # block's output gets the positions instead.
        model.position_embeddings = None
        model.layers[0].register_forward_hook(lambda block, args, out: out + table.weight[:seq])
    with torch.no_grad():
        return model(in_indices)
