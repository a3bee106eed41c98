"""SiLU returning 2 · x · sigmoid(x), twice its value, in SiLU and in every SwiGLU gate
(the feed-forward, the block, the model)."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {"silu", "swiglu", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "silu_doubled"


def _silu(x):
    return 2 * x * torch.sigmoid(x)


def run_silu(in_features):
    return _silu(in_features)


def _ffn(x, w1, w2, w3):
    return (_silu(x @ w1.T) * (x @ w3.T)) @ w2.T


_adapters = PartsAdapters(Parts(ffn=_ffn))
run_swiglu = _adapters.run_swiglu
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
