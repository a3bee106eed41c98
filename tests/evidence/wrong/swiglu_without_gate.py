"""SwiGLU without its gate, w2(w3 x): the value branch alone, never multiplied by silu(w1 x);
in the feed-forward, the block and the model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {"swiglu", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "swiglu_without_gate"


def _ffn(x, w1, w2, w3):
    return (x @ w3.T) @ w2.T


_adapters = PartsAdapters(Parts(ffn=_ffn))
run_swiglu = _adapters.run_swiglu
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
