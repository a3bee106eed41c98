"""Decoder-only Transformer language model, in every architecture variant of the SPEC."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from cs336_basics._checks import check_integer_tensor, check_min_ndim
from cs336_basics.builders import make_norm
from cs336_basics.config import ModelConfig
from cs336_basics.dropout import Dropout
from cs336_basics.embedding import Embedding
from cs336_basics.linear import Linear
from cs336_basics.transformer_block import TransformerBlock

_HEAD = "lm_head.weight"
_EMBEDDINGS = "token_embeddings.weight"


class TransformerLM(nn.Module):
    """Token embeddings (+ learned positions) → ``num_layers`` blocks → ``ln_final`` → ``lm_head``.

    The positional constructor is the SPEC's (the default LLaMA-style model); any other
    :class:`ModelConfig` key, or an upstream ablation flag, can be given by keyword
    (``norm="layernorm"``, ``remove_rope=True``), and :meth:`from_config` takes a config
    object or dict. The resolved config is ``self.config``.

    Parameters: ``token_embeddings.weight (vocab_size, d_model)``; with learned positions
    ``position_embeddings.weight (context_length, d_model)``; ``layers.{i}.*`` (see
    :class:`TransformerBlock`); ``ln_final.*`` (pre-norm models with a norm only: a post-norm
    block already ends in a norm); ``lm_head.weight (vocab_size, d_model)``. With
    ``tie_embeddings`` the head's weight *is* the embedding matrix; the state dict then
    holds it once, under ``token_embeddings.weight``, and loading accepts a dict with or
    without ``lm_head.weight`` (if present it must equal the embeddings exactly).

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
        rope_theta: float = 10000.0,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        config = ModelConfig.from_dict(
            {
                "vocab_size": vocab_size,
                "context_length": context_length,
                "d_model": d_model,
                "num_layers": num_layers,
                "num_heads": num_heads,
                "d_ff": d_ff,
                "rope_theta": rope_theta,
                **options,
            }
        )
        self.config = config
        self.vocab_size = vocab_size
        self.context_length = context_length
        factory = {"device": device, "dtype": dtype}

        self.token_embeddings = Embedding(vocab_size, d_model, **factory)
        self.position_embeddings: Embedding | None = None
        if config.positions == "learned":
            self.position_embeddings = Embedding(context_length, d_model, **factory)
        self.embedding_dropout = Dropout(config.embedding_dropout)
        self.layers = nn.ModuleList(
            TransformerBlock.from_config(config, **factory) for _ in range(num_layers)
        )
        final_norm = "none" if config.norm_position == "post" else config.norm
        self.ln_final = make_norm(final_norm, d_model, config.norm_eps, **factory)
        self.lm_head = Linear(d_model, vocab_size, **factory)
        if config.tie_embeddings:
            self.lm_head.weight = self.token_embeddings.weight
            self.register_state_dict_post_hook(_drop_tied_head)
            self.register_load_state_dict_pre_hook(_accept_tied_head)

    @classmethod
    def from_config(
        cls,
        config: ModelConfig | Mapping[str, Any],
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> TransformerLM:
        """The model ``config`` describes: a :class:`ModelConfig` or a dict of its JSON keys."""
        if not isinstance(config, ModelConfig):
            config = ModelConfig.from_dict(config)
        return cls(**config.to_dict(), device=device, dtype=dtype)

    def forward(self, in_indices: Int[Tensor, "*batch seq"]) -> Float[Tensor, "*batch seq vocab"]:
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
        if self.position_embeddings is not None:
            # Positions 0 … seq-1 are the first rows: a slice, with no gather or range check,
            # since seq ≤ context_length was checked above.
            x = x + self.position_embeddings.weight[:seq_len]
        x = self.embedding_dropout(x)
        # RoPE positions likewise default to 0 … seq-1 inside attention.
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_final(x))


def _drop_tied_head(
    module: nn.Module, state_dict: dict[str, Tensor], prefix: str, local_metadata: Any
) -> None:
    # The head is the embedding matrix: storing it twice would double the checkpoint's
    # largest tensor, and safetensors refuses to save two names for one storage.
    del state_dict[prefix + _HEAD]


def _accept_tied_head(
    module: nn.Module,
    state_dict: dict[str, Tensor],
    prefix: str,
    local_metadata: Any,
    strict: bool,
    missing_keys: list[str],
    unexpected_keys: list[str],
    error_msgs: list[str],
) -> None:
    # Runs before any parameter is loaded, on load_state_dict's own copy of the dict.
    embeddings = state_dict.get(prefix + _EMBEDDINGS)
    if embeddings is None:
        return
    head = state_dict.setdefault(prefix + _HEAD, embeddings)
    if head is not embeddings and not torch.equal(head, embeddings):
        error_msgs.append(
            f"tie_embeddings: {prefix + _HEAD} differs from {prefix + _EMBEDDINGS}, but the "
            f"model ties them; drop {prefix + _HEAD} or make it equal"
        )
