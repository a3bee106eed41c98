"""SwiGLU that uses w1 for both branches, w2(silu(w1 x) * w1 x), and never w3 (a copy-paste
slip); in the feed-forward, the block and the model."""

from torch.nn.functional import silu

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset(
    {"swiglu", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "swiglu_w1_for_both_branches"


def _ffn(x, w1, w2, w3):
    a = x @ w1.T
    return (silu(a) * a) @ w2.T


_adapters = PartsAdapters(Parts(ffn=_ffn))
run_swiglu = _adapters.run_swiglu
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
