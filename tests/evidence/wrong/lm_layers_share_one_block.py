"""A language model whose layers are one block module repeated (nn.ModuleList([block] * n)):
loading the weights leaves it with the last layer's, used by every layer."""

from torch import nn

from cs336_basics import TransformerLM
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_layers_share_one_block"


def run_transformer_lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff,
                       rope_theta, weights, in_indices):  # fmt: skip
    model = TransformerLM(vocab_size, context_length, d_model, num_layers, num_heads, d_ff,
                          rope_theta)  # fmt: skip
    model.layers = nn.ModuleList([model.layers[0]] * num_layers)
    model.load_state_dict(weights)
    return model(in_indices)
