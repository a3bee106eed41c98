"""SiLU with the sign lost in the exponent, x / (1 + exp(x)) = x · sigmoid(-x): in SiLU, in
SwiGLU's gate and in every feed-forward of the block and the model."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {"silu", "swiglu", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "silu_sigmoid_of_minus_x"


def run_silu(in_features):
    return in_features / (1 + torch.exp(in_features))


def _swiglu(x, w1, w2, w3):
    return (run_silu(x @ w1.T) * (x @ w3.T)) @ w2.T


_adapters = PartsAdapters(Parts(ffn=_swiglu))
run_swiglu = _adapters.run_swiglu
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
