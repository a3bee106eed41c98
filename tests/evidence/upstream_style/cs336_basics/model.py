"""The pre-norm Transformer block and the full Transformer language model."""

import torch
from torch import Tensor, nn

from cs336_basics.attention import MultiHeadSelfAttention
from cs336_basics.layers import Embedding, Linear, RMSNorm, SwiGLU


class TransformerBlock(nn.Module):
    """Pre-norm block ``h = x + attn(ln1(x)); out = h + ffn(ln2(h))``: (batch, seq, d_model)."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        max_seq_len: int,
        theta: float,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.ln1 = RMSNorm(d_model, device=device, dtype=dtype)
        self.attn = MultiHeadSelfAttention(
            d_model, num_heads, max_seq_len, theta, device=device, dtype=dtype
        )
        self.ln2 = RMSNorm(d_model, device=device, dtype=dtype)
        self.ffn = SwiGLU(d_model, d_ff, device=device, dtype=dtype)

    def forward(self, x: Tensor, token_positions: Tensor | None = None) -> Tensor:
        h = x + self.attn(self.ln1(x), token_positions)
        return h + self.ffn(self.ln2(h))


class TransformerLM(nn.Module):
    """Token ids (batch, seq) -> unnormalised next-token logits (batch, seq, vocab_size)."""

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        d_model: int,
        num_layers: int,
        num_heads: int,
        d_ff: int,
        rope_theta: float,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.token_embeddings = Embedding(vocab_size, d_model, device=device, dtype=dtype)
        self.layers = nn.ModuleList(
            TransformerBlock(
                d_model, num_heads, d_ff, context_length, rope_theta, device=device, dtype=dtype
            )
            for _ in range(num_layers)
        )
        self.ln_final = RMSNorm(d_model, device=device, dtype=dtype)
        self.lm_head = Linear(d_model, vocab_size, device=device, dtype=dtype)

    def forward(self, token_ids: Tensor) -> Tensor:
        x = self.token_embeddings(token_ids)
        positions = torch.arange(token_ids.shape[-1], device=token_ids.device)
        for layer in self.layers:
            x = layer(x, positions)
        return self.lm_head(self.ln_final(x))
