"""A LLaMA-style Transformer language model built from torch tensor ops, one concept per file."""

from cs336_basics.attention import scaled_dot_product_attention
from cs336_basics.embedding import Embedding
from cs336_basics.linear import Linear
from cs336_basics.multihead_attention import MultiHeadSelfAttention
from cs336_basics.rmsnorm import RMSNorm
from cs336_basics.rope import RotaryPositionalEmbedding
from cs336_basics.silu import silu
from cs336_basics.softmax import softmax
from cs336_basics.swiglu import SwiGLU, default_d_ff
from cs336_basics.transformer_block import TransformerBlock
from cs336_basics.transformer_lm import TransformerLM

__all__ = [
    "Embedding",
    "Linear",
    "MultiHeadSelfAttention",
    "RMSNorm",
    "RotaryPositionalEmbedding",
    "SwiGLU",
    "TransformerBlock",
    "TransformerLM",
    "default_d_ff",
    "scaled_dot_product_attention",
    "silu",
    "softmax",
]
