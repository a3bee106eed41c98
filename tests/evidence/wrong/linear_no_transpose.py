"""Linear computing x W instead of x Wᵀ, in every Linear: the Linear adapter, attention's
projections, the feed-forward and the output head. Wrong values where W is square (attention's
projections), a shape error where it is not: the failures downstream follow from Linear."""

from functools import partial

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters, swiglu

CAUGHT_BY = frozenset(
    {
        "linear",
        "swiglu",
        "multihead_self_attention",
        "multihead_self_attention_with_rope",
        "transformer_block",
        "transformer_lm",
        "transformer_lm_truncated_input",
    }
)
DIAGNOSED_AS = "linear_weight_not_transposed"


def _linear(x, weight):
    return x @ weight


_adapters = PartsAdapters(Parts(linear=_linear, ffn=partial(swiglu, linear=_linear)))
run_linear = _adapters.run_linear
run_swiglu = _adapters.run_swiglu
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
run_transformer_block = _adapters.run_transformer_block
run_transformer_lm = _adapters.run_transformer_lm
