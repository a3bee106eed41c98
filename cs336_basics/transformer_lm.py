"""Decoder-only Transformer language model."""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from cs336_basics._checks import check_integer_tensor, check_min_ndim, check_positive_int
from cs336_basics.embedding import Embedding
from cs336_basics.linear import Linear
from cs336_basics.rmsnorm import RMSNorm
from cs336_basics.transformer_block import TransformerBlock


class TransformerLM(nn.Module):
    """Token embeddings → ``num_layers`` pre-norm blocks → ``ln_final`` → ``lm_head``.

    Parameters: ``token_embeddings.weight (vocab_size, d_model)``, ``layers.{i}.*`` (see
    :class:`TransformerBlock`), ``ln_final.weight (d_model,)``, ``lm_head.weight
    (vocab_size, d_model)`` (not tied to the embeddings). Positions enter only through
    RoPE inside attention, with tables sized ``context_length``.

    ``forward(in_indices)``: integer ids ``(batch, seq)`` (any leading dims work) with
    ``seq ≤ context_length`` → unnormalised logits ``(batch, seq, vocab_size)``.
    """

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        d_model: int,
        num_layers: int,
        num_heads: int,
        d_ff: int,
        rope_theta: float,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("TransformerLM", "context_length", context_length)
        check_positive_int("TransformerLM", "num_layers", num_layers)
        self.vocab_size = vocab_size
        self.context_length = context_length
        factory = {"device": device, "dtype": dtype}

        self.token_embeddings = Embedding(vocab_size, d_model, **factory)
        self.layers = nn.ModuleList(
            TransformerBlock(d_model, num_heads, d_ff, context_length, rope_theta, **factory)
            for _ in range(num_layers)
        )
        self.ln_final = RMSNorm(d_model, **factory)
        self.lm_head = Linear(d_model, vocab_size, **factory)

    def forward(self, in_indices: Int[Tensor, "... seq"]) -> Float[Tensor, "... seq vocab"]:
        owner = "TransformerLM"
        check_integer_tensor(owner, "in_indices", in_indices)
        check_min_ndim(owner, "in_indices", in_indices, 1, "(..., seq)")
        seq_len = in_indices.shape[-1]
        if seq_len > self.context_length:
            raise ValueError(
                f"{owner}: sequence length {seq_len} (in_indices.shape="
                f"{tuple(in_indices.shape)}) exceeds context_length={self.context_length}"
            )
        x = self.token_embeddings(in_indices)
        # Positions default to 0 … seq-1 inside attention: a slice of the RoPE tables with
        # no per-layer gather or range check, since seq ≤ context_length was checked above.
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_final(x))
