"""Float64 NumPy reference math: the ground truth that expected test outputs are computed with.

NumPy only, no torch, so the oracle shares no code and no rounding with the implementations it
checks. Every function converts its inputs to float64 and returns float64 arrays.
"""

from cs336_staff.oracle.attention import (
    multihead_self_attention,
    rope,
    scaled_dot_product_attention,
)
from cs336_staff.oracle.functional import (
    embedding,
    feedforward,
    gelu,
    layernorm,
    linear,
    rmsnorm,
    silu,
    softmax,
    swiglu,
)
from cs336_staff.oracle.model import (
    DEFAULT_CONFIG,
    SIZE_KEYS,
    lm_parameter_shapes,
    transformer_block,
    transformer_lm,
)
from cs336_staff.oracle.training import (
    adamw_trajectory,
    clip_gradients,
    cosine_schedule,
    cross_entropy,
    greedy_generate,
    nucleus_distribution,
)

__all__ = [
    "DEFAULT_CONFIG",
    "SIZE_KEYS",
    "adamw_trajectory",
    "clip_gradients",
    "cosine_schedule",
    "cross_entropy",
    "embedding",
    "feedforward",
    "gelu",
    "greedy_generate",
    "layernorm",
    "linear",
    "lm_parameter_shapes",
    "multihead_self_attention",
    "nucleus_distribution",
    "rmsnorm",
    "rope",
    "scaled_dot_product_attention",
    "silu",
    "softmax",
    "swiglu",
    "transformer_block",
    "transformer_lm",
]
