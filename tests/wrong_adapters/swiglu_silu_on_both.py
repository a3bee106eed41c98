"""SwiGLU applying SiLU to the value branch too: w2(silu(w1 x) * silu(w3 x))."""

from torch.nn.functional import silu

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"swiglu"})
DIAGNOSED_AS = "swiglu_silu_on_both_branches"


def run_swiglu(d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features):
    return (silu(in_features @ w1_weight.T) * silu(in_features @ w3_weight.T)) @ w2_weight.T
