"""A from-scratch Transformer LM, written to the upstream CS336 assignment 1 handout."""

from cs336_basics.attention import (
    MultiHeadSelfAttention,
    RotaryPositionalEmbedding,
    scaled_dot_product_attention,
)
from cs336_basics.bpe import train_bpe
from cs336_basics.layers import Embedding, Linear, RMSNorm, SwiGLU, silu, softmax
from cs336_basics.model import TransformerBlock, TransformerLM

__all__ = [
    "Embedding",
    "Linear",
    "MultiHeadSelfAttention",
    "RMSNorm",
    "RotaryPositionalEmbedding",
    "SwiGLU",
    "TransformerBlock",
    "TransformerLM",
    "scaled_dot_product_attention",
    "silu",
    "softmax",
    "train_bpe",
]
