"""Weights designed to expose bugs, not merely to initialise a model.

Random weights drawn like a training run's start would hide real mistakes: unit norm gains
make a missing or swapped norm invisible, a tied head hides a head that reads the wrong
matrix, and near-uniform attention hides a wrong scale or mask. So every norm gain is drawn
on its own away from 1, the output head is drawn independently of the embeddings, and the
query/key projections are scaled up until attention is sharp.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Multiplies the query and key projections: each attention logit's spread grows with the
# square of this, which keeps every head far from uniform (the generator prints the evidence).
QK_SCALE = 2.0


def truncated_normal(rng: np.random.Generator, shape: tuple[int, ...], std: float) -> np.ndarray:
    """N(0, std²) cut at ±3 std, by redrawing the values outside (SPEC's init rule)."""
    values = rng.standard_normal(shape)
    outside = np.abs(values) > 3
    while outside.any():
        values[outside] = rng.standard_normal(int(outside.sum()))
        outside = np.abs(values) > 3
    return (values * std).astype(np.float32)


def linear_weight(
    rng: np.random.Generator, d_out: int, d_in: int, scale: float = 1.0
) -> np.ndarray:
    return truncated_normal(rng, (d_out, d_in), scale * np.sqrt(2.0 / (d_in + d_out)))


def bias(rng: np.random.Generator, d: int) -> np.ndarray:
    return (0.1 * rng.standard_normal(d)).astype(np.float32)


def norm_gain(rng: np.random.Generator, d: int) -> np.ndarray:
    """A gain vector in [0.5, 0.9] ∪ [1.1, 1.5]: never 1, and different for every norm."""
    magnitude = rng.uniform(0.1, 0.5, d)
    sign = rng.choice([-1.0, 1.0], d)
    return (1.0 + sign * magnitude).astype(np.float32)


def norm_weights(rng: np.random.Generator, name: str, d: int, config: dict[str, Any]) -> dict:
    if config.get("norm", "rmsnorm") == "none":
        return {}
    weights = {f"{name}.weight": norm_gain(rng, d)}
    if config.get("norm") == "layernorm":
        weights[f"{name}.bias"] = bias(rng, d)
    return weights


def block_weights(rng: np.random.Generator, config: dict[str, Any]) -> dict[str, np.ndarray]:
    """One block's parameters, named relative to the block (`attn.q_proj.weight`, ...)."""
    d_model, d_ff = config["d_model"], config["d_ff"]
    with_bias = config.get("bias", False)
    weights = norm_weights(rng, "ln1", d_model, config)
    for name in ("q_proj", "k_proj", "v_proj", "output_proj"):
        scale = QK_SCALE if name in ("q_proj", "k_proj") else 1.0
        weights[f"attn.{name}.weight"] = linear_weight(rng, d_model, d_model, scale)
        if with_bias:
            weights[f"attn.{name}.bias"] = bias(rng, d_model)
    weights |= norm_weights(rng, "ln2", d_model, config)
    matrices = {"w1": (d_ff, d_model), "w2": (d_model, d_ff)}
    if config.get("ffn", "swiglu") == "swiglu":
        matrices["w3"] = (d_ff, d_model)
    for name, (d_out, d_in) in matrices.items():
        weights[f"ffn.{name}.weight"] = linear_weight(rng, d_out, d_in)
        if with_bias:
            weights[f"ffn.{name}.bias"] = bias(rng, d_out)
    return weights


def lm_weights(rng: np.random.Generator, config: dict[str, Any]) -> dict[str, np.ndarray]:
    """A whole model's parameters under SPEC names; `lm_head` is independent unless tied."""
    d_model = config["d_model"]
    # A tied table is also the output head: at std 1 its logits would be O(√d_model), ten
    # times an independent head's, and so would their rounding. 1/√d_model keeps them O(1).
    # Learned positions are drawn at the token table's scale, so neither drowns the other.
    table_std = 1.0 / np.sqrt(d_model) if config.get("tie_embeddings", False) else 1.0
    weights = {
        "token_embeddings.weight": truncated_normal(rng, (config["vocab_size"], d_model), table_std)
    }
    if config.get("positions") == "learned":
        weights["position_embeddings.weight"] = truncated_normal(
            rng, (config["context_length"], d_model), table_std
        )
    for layer in range(config["num_layers"]):
        for name, value in block_weights(rng, config).items():
            weights[f"layers.{layer}.{name}"] = value
    if config.get("norm_position", "pre") == "pre":
        weights |= norm_weights(rng, "ln_final", d_model, config)
    if not config.get("tie_embeddings", False):
        weights["lm_head.weight"] = linear_weight(rng, config["vocab_size"], d_model)
    return weights
