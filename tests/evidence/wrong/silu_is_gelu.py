"""SiLU written as F.gelu, in SiLU and in every SwiGLU gate (the feed-forward, the block,
the model). There the output is a GELU gate's, which swiglu_gelu_gate names too: one output
under two names, of which the SiLU family's own failures pick silu_is_gelu."""

from torch.nn.functional import gelu

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {"silu", "swiglu", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "silu_is_gelu"


def _silu(x):
    return gelu(x)


def run_silu(in_features):
    return _silu(in_features)


def _ffn(x, w1, w2, w3):
    return (_silu(x @ w1.T) * (x @ w3.T)) @ w2.T


_adapters = PartsAdapters(Parts(ffn=_ffn))
run_swiglu = _adapters.run_swiglu
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
