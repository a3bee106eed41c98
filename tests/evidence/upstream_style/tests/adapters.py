"""Adapters from the CS336 test harness to this submission's ``cs336_basics``.

Each ``run_*`` builds a module on the input's device, in the floating input's dtype
(integer-input modules take the dtype of their weights), loads the given weights and runs
a forward pass, autograd on: the tests backpropagate through it to the inputs.
"""

from __future__ import annotations

import os

from torch import Tensor

from cs336_basics import (
    Embedding,
    Linear,
    MultiHeadSelfAttention,
    RMSNorm,
    RotaryPositionalEmbedding,
    SwiGLU,
    TransformerBlock,
    TransformerLM,
    scaled_dot_product_attention,
    silu,
    softmax,
    train_bpe,
)


def run_linear(d_in: int, d_out: int, weights: Tensor, in_features: Tensor) -> Tensor:
    """``(..., d_in) -> (..., d_out)`` with ``weights`` (d_out, d_in)."""
    layer = Linear(d_in, d_out, device=in_features.device, dtype=in_features.dtype)
    layer.load_state_dict({"weight": weights})
    return layer(in_features)


def run_embedding(vocab_size: int, d_model: int, weights: Tensor, token_ids: Tensor) -> Tensor:
    """ids ``(...)`` -> ``(..., d_model)`` rows of ``weights`` (vocab_size, d_model)."""
    layer = Embedding(vocab_size, d_model, device=token_ids.device, dtype=weights.dtype)
    layer.load_state_dict({"weight": weights})
    return layer(token_ids)


def run_swiglu(
    d_model: int,
    d_ff: int,
    w1_weight: Tensor,
    w2_weight: Tensor,
    w3_weight: Tensor,
    in_features: Tensor,
) -> Tensor:
    """SwiGLU feed-forward: ``(..., d_model) -> (..., d_model)``."""
    ffn = SwiGLU(d_model, d_ff, device=in_features.device, dtype=in_features.dtype)
    ffn.load_state_dict({"w1.weight": w1_weight, "w2.weight": w2_weight, "w3.weight": w3_weight})
    return ffn(in_features)


def run_scaled_dot_product_attention(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None
) -> Tensor:
    """Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v), mask (..., n, m) -> (..., n, d_v)."""
    return scaled_dot_product_attention(Q, K, V, mask)


def run_multihead_self_attention(
    d_model: int,
    num_heads: int,
    q_proj_weight: Tensor,
    k_proj_weight: Tensor,
    v_proj_weight: Tensor,
    o_proj_weight: Tensor,
    in_features: Tensor,
) -> Tensor:
    """Causal MHA without RoPE: ``(..., seq, d_model) -> (..., seq, d_model)``."""
    mha = MultiHeadSelfAttention(
        d_model, num_heads, device=in_features.device, dtype=in_features.dtype
    )
    mha.load_state_dict(_mha_state(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight))
    return mha(in_features)


def run_multihead_self_attention_with_rope(
    d_model: int,
    num_heads: int,
    max_seq_len: int,
    theta: float,
    q_proj_weight: Tensor,
    k_proj_weight: Tensor,
    v_proj_weight: Tensor,
    o_proj_weight: Tensor,
    in_features: Tensor,
    token_positions: Tensor | None = None,
) -> Tensor:
    """Causal MHA with RoPE on q and k: ``(..., seq, d_model) -> (..., seq, d_model)``."""
    mha = MultiHeadSelfAttention(
        d_model,
        num_heads,
        max_seq_len,
        theta,
        device=in_features.device,
        dtype=in_features.dtype,
    )
    mha.load_state_dict(_mha_state(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight))
    return mha(in_features, token_positions)


def run_rope(
    d_k: int,
    theta: float,
    max_seq_len: int,
    in_query_or_key: Tensor,
    token_positions: Tensor,
) -> Tensor:
    """RoPE at ``token_positions`` (..., seq): ``(..., seq, d_k) -> (..., seq, d_k)``."""
    rope = RotaryPositionalEmbedding(theta, d_k, max_seq_len, device=in_query_or_key.device)
    return rope(in_query_or_key, token_positions)


def run_transformer_block(
    d_model: int,
    num_heads: int,
    d_ff: int,
    max_seq_len: int,
    theta: float,
    weights: dict[str, Tensor],
    in_features: Tensor,
) -> Tensor:
    """One pre-norm block: ``(batch, seq, d_model) -> (batch, seq, d_model)``."""
    block = TransformerBlock(
        d_model,
        num_heads,
        d_ff,
        max_seq_len,
        theta,
        device=in_features.device,
        dtype=in_features.dtype,
    )
    block.load_state_dict(weights)
    return block(in_features)


def run_transformer_lm(
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float,
    weights: dict[str, Tensor],
    in_indices: Tensor,
) -> Tensor:
    """Logits ``(batch, seq, vocab_size)`` for token ids ``(batch, seq)``."""
    model = TransformerLM(
        vocab_size,
        context_length,
        d_model,
        num_layers,
        num_heads,
        d_ff,
        rope_theta,
        device=in_indices.device,
        dtype=weights["token_embeddings.weight"].dtype,
    )
    model.load_state_dict(weights)
    return model(in_indices)


def run_train_bpe(
    input_path: str | os.PathLike, vocab_size: int, special_tokens: list[str], **kwargs
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """The vocabulary and merges of byte-level BPE trained on ``input_path``."""
    return train_bpe(input_path, vocab_size, special_tokens)


def run_rmsnorm(d_model: int, eps: float, weights: Tensor, in_features: Tensor) -> Tensor:
    """RMSNorm with gain ``weights`` (d_model,): ``(..., d_model) -> (..., d_model)``."""
    norm = RMSNorm(d_model, eps, device=in_features.device, dtype=weights.dtype)
    norm.load_state_dict({"weight": weights})
    return norm(in_features)


def run_silu(in_features: Tensor) -> Tensor:
    """Elementwise SiLU."""
    return silu(in_features)


def run_softmax(in_features: Tensor, dim: int) -> Tensor:
    """Softmax along ``dim``."""
    return softmax(in_features, dim=dim)


def _mha_state(q: Tensor, k: Tensor, v: Tensor, o: Tensor) -> dict[str, Tensor]:
    """State dict of a MultiHeadSelfAttention from its four projection matrices."""
    return {"q_proj.weight": q, "k_proj.weight": k, "v_proj.weight": v, "output_proj.weight": o}
