"""Post-norm read as normalising each sublayer's output before it joins the residual stream:
h = x + ln1(attn(x)), out = h + ln2(ffn(h))."""

from types import MethodType

import torch

from cs336_basics import TransformerLM
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"transformer_lm_from_config"})
DIAGNOSED_AS = "config_post_norm_on_sublayer_outputs"


def _forward(block, x, token_positions=None):
    h = x + block.ln1(block.attn(x, token_positions))
    return h + block.ln2(block.ffn(h))


def run_transformer_lm_from_config(config, weights, in_indices):
    model = TransformerLM.from_config(config, dtype=weights["token_embeddings.weight"].dtype)
    for block in model.layers:
        if block.post_norm:
            block.forward = MethodType(_forward, block)
    model.load_state_dict(weights)
    model.eval()
    with torch.no_grad():
        return model(in_indices)
