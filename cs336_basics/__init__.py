"""A Transformer language model built from torch tensor ops, one concept per file.

The default is the SPEC's LLaMA-style pre-norm decoder; :class:`ModelConfig` selects the
architecture variants (GPT-2's LayerNorm, learned positions, GELU MLP, biases and tied
embeddings, and the standard ablations). The training half: cross-entropy, AdamW, the
cosine schedule, gradient clipping, batches, checkpoints and decoding; the byte-level BPE
tokenizer and its trainer.
"""

from cs336_basics.adamw import AdamW
from cs336_basics.attention import scaled_dot_product_attention
from cs336_basics.bpe_training import train_bpe
from cs336_basics.checkpoint import load_checkpoint, save_checkpoint
from cs336_basics.config import ModelConfig
from cs336_basics.cross_entropy import cross_entropy
from cs336_basics.data import get_batch
from cs336_basics.decoding import generate, next_token_probabilities, sample_next_token
from cs336_basics.dropout import Dropout, dropout
from cs336_basics.embedding import Embedding
from cs336_basics.feedforward import PositionwiseFeedForward
from cs336_basics.gelu import gelu
from cs336_basics.gradient_clipping import clip_gradients
from cs336_basics.layernorm import LayerNorm
from cs336_basics.linear import Linear
from cs336_basics.lr_schedule import cosine_lr_schedule
from cs336_basics.multihead_attention import MultiHeadSelfAttention
from cs336_basics.rmsnorm import RMSNorm
from cs336_basics.rope import RotaryPositionalEmbedding
from cs336_basics.silu import silu
from cs336_basics.softmax import softmax
from cs336_basics.swiglu import SwiGLU, default_d_ff
from cs336_basics.tokenizer import Tokenizer
from cs336_basics.transformer_block import TransformerBlock
from cs336_basics.transformer_lm import TransformerLM

__all__ = [
    "AdamW",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "Linear",
    "ModelConfig",
    "MultiHeadSelfAttention",
    "PositionwiseFeedForward",
    "RMSNorm",
    "RotaryPositionalEmbedding",
    "SwiGLU",
    "Tokenizer",
    "TransformerBlock",
    "TransformerLM",
    "clip_gradients",
    "cosine_lr_schedule",
    "cross_entropy",
    "default_d_ff",
    "dropout",
    "gelu",
    "generate",
    "get_batch",
    "load_checkpoint",
    "next_token_probabilities",
    "sample_next_token",
    "save_checkpoint",
    "scaled_dot_product_attention",
    "silu",
    "softmax",
    "train_bpe",
]
