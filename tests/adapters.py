"""The adapters module the tests use by default: glue from the harness to ``cs336_basics``.

Each ``run_*`` function builds one component of the reference implementation, loads the
weights it is handed, runs a forward pass and returns the output tensor, autograd on (the
backward tests differentiate it with respect to its float inputs).
Function and parameter names follow the upstream CS336 (2025) adapters, so a student's
adapters file can be used instead. Another implementation is swapped in with
``--adapters`` / ``CS336_ADAPTERS``, never by editing the tests.

Modules are built on the device of the input they run on, in the dtype of the floating
input (so mixed-dtype calls do not fail in a matmul); integer-input components (embedding,
LM) take the dtype of their weights.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import IO, Any, BinaryIO

import numpy as np
import numpy.typing as npt
import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from cs336_basics import (
    AdamW,
    Embedding,
    LayerNorm,
    Linear,
    ModelConfig,
    MultiHeadSelfAttention,
    PositionwiseFeedForward,
    RMSNorm,
    RotaryPositionalEmbedding,
    SwiGLU,
    TransformerBlock,
    TransformerLM,
    clip_gradients,
    cosine_lr_schedule,
    cross_entropy,
    gelu,
    generate,
    get_batch,
    load_checkpoint,
    sample_next_token,
    save_checkpoint,
    scaled_dot_product_attention,
    silu,
    softmax,
)


def run_linear(
    d_in: int,
    d_out: int,
    weights: Float[Tensor, " d_out d_in"],
    in_features: Float[Tensor, " ... d_in"],
) -> Float[Tensor, " ... d_out"]:
    """Apply a bias-free ``Linear(d_in, d_out)`` holding ``weights`` to ``in_features``."""
    layer = Linear(d_in, d_out, device=in_features.device, dtype=in_features.dtype)
    layer.load_state_dict({"weight": weights})
    return layer(in_features)


def run_embedding(
    vocab_size: int,
    d_model: int,
    weights: Float[Tensor, " vocab_size d_model"],
    token_ids: Int[Tensor, " ..."],
) -> Float[Tensor, " ... d_model"]:
    """Look up ``token_ids`` in an ``Embedding(vocab_size, d_model)`` table set to ``weights``."""
    layer = Embedding(vocab_size, d_model, device=token_ids.device, dtype=weights.dtype)
    layer.load_state_dict({"weight": weights})
    return layer(token_ids)


def run_swiglu(
    d_model: int,
    d_ff: int,
    w1_weight: Float[Tensor, " d_ff d_model"],
    w2_weight: Float[Tensor, " d_model d_ff"],
    w3_weight: Float[Tensor, " d_ff d_model"],
    in_features: Float[Tensor, " ... d_model"],
) -> Float[Tensor, " ... d_model"]:
    """Run the SwiGLU feed-forward ``w2(silu(w1 x) * w3 x)`` with the three given matrices."""
    ffn = SwiGLU(d_model, d_ff, device=in_features.device, dtype=in_features.dtype)
    ffn.load_state_dict({"w1.weight": w1_weight, "w2.weight": w2_weight, "w3.weight": w3_weight})
    return ffn(in_features)


def run_scaled_dot_product_attention(
    Q: Float[Tensor, " ... queries d_k"],
    K: Float[Tensor, " ... keys d_k"],
    V: Float[Tensor, " ... keys d_v"],
    mask: Bool[Tensor, " ... queries keys"] | None = None,
) -> Float[Tensor, " ... queries d_v"]:
    """Attention ``softmax(QKᵀ/√d_k) V``; ``mask`` True marks the keys a query may attend."""
    return scaled_dot_product_attention(Q, K, V, mask)


def run_multihead_self_attention(
    d_model: int,
    num_heads: int,
    q_proj_weight: Float[Tensor, " d_model d_model"],
    k_proj_weight: Float[Tensor, " d_model d_model"],
    v_proj_weight: Float[Tensor, " d_model d_model"],
    o_proj_weight: Float[Tensor, " d_model d_model"],
    in_features: Float[Tensor, " ... seq d_model"],
) -> Float[Tensor, " ... seq d_model"]:
    """Causal multi-head self-attention without RoPE, using the four projection matrices."""
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
    q_proj_weight: Float[Tensor, " d_model d_model"],
    k_proj_weight: Float[Tensor, " d_model d_model"],
    v_proj_weight: Float[Tensor, " d_model d_model"],
    o_proj_weight: Float[Tensor, " d_model d_model"],
    in_features: Float[Tensor, " ... seq d_model"],
    token_positions: Int[Tensor, " ... seq"] | None = None,
) -> Float[Tensor, " ... seq d_model"]:
    """Causal multi-head self-attention with RoPE on Q and K at ``token_positions``.

    ``token_positions=None`` means positions ``0 … seq-1``.
    """
    mha = MultiHeadSelfAttention(
        d_model,
        num_heads,
        max_seq_len=max_seq_len,
        theta=theta,
        device=in_features.device,
        dtype=in_features.dtype,
    )
    mha.load_state_dict(_mha_state(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight))
    return mha(in_features, token_positions)


def run_rope(
    d_k: int,
    theta: float,
    max_seq_len: int,
    in_query_or_key: Float[Tensor, " ... seq d_k"],
    token_positions: Int[Tensor, " ... seq"],
) -> Float[Tensor, " ... seq d_k"]:
    """Rotate adjacent pairs of ``in_query_or_key`` by RoPE angles at ``token_positions``."""
    rope = RotaryPositionalEmbedding(theta, d_k, max_seq_len, device=in_query_or_key.device)
    return rope(in_query_or_key, token_positions)


def run_transformer_block(
    d_model: int,
    num_heads: int,
    d_ff: int,
    max_seq_len: int,
    theta: float,
    weights: dict[str, Tensor],
    in_features: Float[Tensor, " batch seq d_model"],
) -> Float[Tensor, " batch seq d_model"]:
    """One pre-norm block; ``weights`` keys are relative to it (``attn.q_proj.weight``, ...)."""
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
    in_indices: Int[Tensor, " batch seq"],
) -> Float[Tensor, " batch seq vocab_size"]:
    """Logits of the full LM for ``in_indices``; ``weights`` uses the model's state-dict names."""
    sizes = (vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta)
    model = _loaded_lm(sizes, weights, in_indices.device)
    return model(in_indices)


def get_transformer_lm(
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float,
) -> torch.nn.Module:
    """The LM ``run_transformer_lm`` runs, built and randomly initialised, no weights loaded.

    Its parameters are registered under the SPEC's names (``layers.{i}.attn.q_proj.weight``,
    ...), so ``load_state_dict(weights)`` takes the reference weights strictly, and its
    submodules are ``layers.{i}.ln1``, ``.attn``, ``.ln2``, ``.ffn``, ``ln_final`` and
    ``lm_head``. ``forward(token_ids (batch, seq))`` returns the logits.
    """
    return TransformerLM(
        vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta
    )


def get_transformer_block(
    d_model: int, num_heads: int, d_ff: int, max_seq_len: int, theta: float
) -> torch.nn.Module:
    """The block ``run_transformer_block`` runs, randomly initialised: parameters and
    submodules (``ln1``, ``attn``, ``ln2``, ``ffn``) under the SPEC's names;
    ``forward(x (batch, seq, d_model))`` uses positions ``0 … seq−1``."""
    return TransformerBlock(d_model, num_heads, d_ff, max_seq_len, theta)


def run_rmsnorm(
    d_model: int,
    eps: float,
    weights: Float[Tensor, " d_model"],
    in_features: Float[Tensor, " ... d_model"],
) -> Float[Tensor, " ... d_model"]:
    """RMS-normalise the last dim of ``in_features`` and scale by the gain ``weights``."""
    norm = RMSNorm(d_model, eps, device=in_features.device, dtype=weights.dtype)
    norm.load_state_dict({"weight": weights})
    return norm(in_features)


def run_silu(in_features: Float[Tensor, " ..."]) -> Float[Tensor, " ..."]:
    """Elementwise SiLU, ``x * sigmoid(x)``."""
    return silu(in_features)


def run_softmax(in_features: Float[Tensor, " ..."], dim: int) -> Float[Tensor, " ..."]:
    """Softmax of ``in_features`` along ``dim``."""
    return softmax(in_features, dim=dim)


def run_layernorm(
    d_model: int,
    eps: float,
    weights: Float[Tensor, " d_model"],
    biases: Float[Tensor, " d_model"],
    in_features: Float[Tensor, " ... d_model"],
) -> Float[Tensor, " ... d_model"]:
    """LayerNorm of the last dim of ``in_features`` with gain ``weights`` and shift ``biases``."""
    norm = LayerNorm(d_model, eps, device=in_features.device, dtype=weights.dtype)
    norm.load_state_dict({"weight": weights, "bias": biases})
    return norm(in_features)


def run_gelu(
    in_features: Float[Tensor, " ..."], approximate: str = "none"
) -> Float[Tensor, " ..."]:
    """Elementwise GELU, exact (``"none"``) or GPT-2's tanh approximation (``"tanh"``)."""
    return gelu(in_features, approximate)


def run_positionwise_feedforward(
    d_model: int,
    d_ff: int,
    weights: dict[str, Tensor],
    in_features: Float[Tensor, " ... d_model"],
) -> Float[Tensor, " ... d_model"]:
    """Two-matrix FFN ``w2(gelu(w1 x))``, exact GELU; ``weights``: ``w1.weight``, ``w2.weight``."""
    ffn = PositionwiseFeedForward(
        d_model, d_ff, "gelu", device=in_features.device, dtype=in_features.dtype
    )
    ffn.load_state_dict(weights)
    return ffn(in_features)


def run_transformer_lm_from_config(
    config: dict[str, Any],
    weights: dict[str, Tensor],
    in_indices: Int[Tensor, " batch seq"],
) -> Float[Tensor, " batch seq vocab_size"]:
    """Evaluation-mode logits of the LM that ``config`` (model_config.json keys) describes."""
    model = TransformerLM.from_config(
        ModelConfig.from_dict(config),
        device=in_indices.device,
        dtype=weights["token_embeddings.weight"].dtype,
    )
    model.load_state_dict(weights)
    model.eval()  # dropout off: the expected logits are the deterministic model's
    return model(in_indices)


# -- the training half -------------------------------------------------------------------------


def run_cross_entropy(
    inputs: Float[Tensor, " ... vocab_size"], targets: Int[Tensor, " ..."]
) -> Float[Tensor, ""]:
    """Mean cross-entropy of the logits ``inputs`` against ``targets`` over every position."""
    return cross_entropy(inputs, targets)


def run_gradient_clipping(parameters: Iterable[torch.nn.Parameter], max_l2_norm: float) -> None:
    """Clip the parameters' gradients in place to a global L2 norm of ``max_l2_norm``."""
    clip_gradients(parameters, max_l2_norm)


def get_adamw_cls() -> type[torch.optim.Optimizer]:
    """The AdamW optimizer class: ``AdamW(params, lr, betas, eps, weight_decay)``."""
    return AdamW


def run_get_lr_cosine_schedule(
    it: int,
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
) -> float:
    """The learning rate at step ``it``: linear warm-up, cosine decay, then the minimum."""
    return cosine_lr_schedule(
        it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters
    )


def run_get_batch(
    dataset: npt.NDArray[np.integer], batch_size: int, context_length: int, device: str
) -> tuple[Int[Tensor, " batch_size context_length"], Int[Tensor, " batch_size context_length"]]:
    """Random windows of ``dataset`` and their labels (shifted by one), on ``device``."""
    return get_batch(dataset, batch_size, context_length, device)


def run_save_checkpoint(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    iteration: int,
    out: str | os.PathLike | BinaryIO | IO[bytes],
) -> None:
    """Write the model's and optimizer's state and ``iteration`` to a path or binary file."""
    save_checkpoint(model, optimizer, iteration, out)


def run_load_checkpoint(
    src: str | os.PathLike | BinaryIO | IO[bytes],
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
) -> int:
    """Restore the model and optimizer from ``src``; the iteration that was saved."""
    return load_checkpoint(src, model, optimizer)


def run_sample_next_token(
    logits: Float[Tensor, " ... vocab_size"], temperature: float, top_p: float, seed: int
) -> Int[Tensor, " ..."]:
    """One token per row of ``logits``: temperature, then nucleus sampling, from ``seed``."""
    generator = torch.Generator(device=logits.device).manual_seed(seed)
    return sample_next_token(logits, temperature, top_p, generator)


def run_generate(
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float,
    weights: dict[str, Tensor],
    prompt: Int[Tensor, " seq"],
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    end_of_text_id: int | None,
    seed: int,
) -> Int[Tensor, " new"]:
    """The tokens the LM with ``weights`` generates after ``prompt`` (end-of-text included)."""
    sizes = (vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta)
    model = _loaded_lm(sizes, weights, prompt.device)
    generator = torch.Generator(device=prompt.device).manual_seed(seed)
    return generate(model, prompt, max_new_tokens, temperature, top_p, end_of_text_id, generator)


def _loaded_lm(sizes: tuple, weights: dict[str, Tensor], device: torch.device) -> TransformerLM:
    """A TransformerLM of the SPEC's positional ``sizes`` on ``device``, holding ``weights``
    (in their dtype)."""
    model = TransformerLM(*sizes, device=device, dtype=weights["token_embeddings.weight"].dtype)
    model.load_state_dict(weights)
    return model


def _mha_state(q: Tensor, k: Tensor, v: Tensor, o: Tensor) -> dict[str, Tensor]:
    """State dict of a MultiHeadSelfAttention from its four projection matrices."""
    return {"q_proj.weight": q, "k_proj.weight": k, "v_proj.weight": v, "output_proj.weight": o}


def run_train_bpe(
    input_path: str | os.PathLike,
    vocab_size: int,
    special_tokens: list[str],
    **kwargs: Any,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """The vocabulary and merges of byte-level BPE trained on ``input_path``."""
    # Imported here, not at the top: this section is appended to the module as a unit.
    from cs336_basics.bpe_training import train_bpe

    return train_bpe(input_path, vocab_size, special_tokens, **kwargs)


def get_tokenizer(
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    special_tokens: list[str] | None = None,
) -> Any:
    """A tokenizer with ``encode``, ``decode`` and ``encode_iterable``."""
    from cs336_basics.tokenizer import Tokenizer

    return Tokenizer(vocab, merges, special_tokens)
