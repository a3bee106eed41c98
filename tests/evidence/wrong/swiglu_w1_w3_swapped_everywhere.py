"""SwiGLU gating the W3 branch instead of W1 in the feed-forward, the block and the model
(the same SwiGLU module used everywhere)."""

from tests import adapters
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset(
    {"swiglu", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "swiglu_w1_w3_swapped"


def _swapped(weights):
    """The weights with w1 and w3 exchanged in every FFN: SwiGLU with the roles swapped."""
    swapped = dict(weights)
    for name in weights:
        if name.endswith("ffn.w1.weight"):
            w3 = name.replace("w1.weight", "w3.weight")
            swapped[name], swapped[w3] = weights[w3], weights[name]
    return swapped


def run_swiglu(**kwargs):
    w1, w3 = kwargs["w1_weight"], kwargs["w3_weight"]
    return adapters.run_swiglu(**kwargs | {"w1_weight": w3, "w3_weight": w1})


def run_transformer_block(**kwargs):
    return adapters.run_transformer_block(**kwargs | {"weights": _swapped(kwargs["weights"])})


def run_transformer_lm(**kwargs):
    return adapters.run_transformer_lm(**kwargs | {"weights": _swapped(kwargs["weights"])})
