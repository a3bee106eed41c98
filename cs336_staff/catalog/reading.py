"""Reading a stored case as the catalog's variants need it: its weights, positions and config,
and the oracle run on them (a whole model changed in every layer by one change to a block)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cs336_harness.judging.diagnosis.numpy_cases import NumpyCase
from cs336_staff import oracle
from cs336_staff.catalog.mistake import Variant
from cs336_staff.oracle.variants import (
    multihead_self_attention_with,
    transformer_lm_with,
)

BLOCK = "transformer_block"


LM = ("transformer_lm", "transformer_lm_truncated_input")


CONFIG_LM = "transformer_lm_from_config"


MHA = "multihead_self_attention"


MHA_ROPE = "multihead_self_attention_with_rope"


LM_SIZES = ("vocab_size", "context_length", "d_model", "num_layers", "num_heads", "d_ff")


# The upstream ablation flags a config may carry (SPEC), which the oracle does not read.
UPSTREAM_FLAGS = ("remove_rmsnorm", "use_post_norm", "remove_rope", "ffn_type")


def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def custom_positions(case: NumpyCase, x: np.ndarray) -> np.ndarray | None:
    """The case's token positions; None where they are 0 … seq−1 (given or omitted)."""
    pos = case.inputs.get("token_positions")
    if pos is None:
        return None
    pos = np.broadcast_to(pos, x.shape[:-1])
    return None if np.array_equal(pos, np.broadcast_to(np.arange(x.shape[-2]), pos.shape)) else pos


def mha_weights(case: NumpyCase) -> list[np.ndarray]:
    return [case.weights[f"{p}.weight"] for p in ("q_proj", "k_proj", "v_proj", "output_proj")]


def run_mha(case: NumpyCase, weights: list[np.ndarray], **options: Any) -> np.ndarray:
    """The oracle's multi-head attention on the case's input, with RoPE where the family has it."""
    return oracle.multihead_self_attention(
        case.inputs["in_features"], *weights, case.params["num_heads"], **rope_args(case) | options
    )


def rope_args(case: NumpyCase) -> dict[str, Any]:
    if case.family != MHA_ROPE:
        return {}
    return {"theta": case.params["theta"], "positions": case.inputs.get("token_positions")}


def run_block(case: NumpyCase, weights: Mapping[str, np.ndarray], **config: Any) -> np.ndarray:
    p = case.params
    return oracle.transformer_block(
        case.inputs["in_features"],
        weights,
        num_heads=p["num_heads"],
        config={"rope_theta": p["theta"]} | config,
    )


def lm_config(case: NumpyCase) -> dict[str, Any]:
    return {k: case.params[k] for k in (*LM_SIZES, "rope_theta")}


def run_lm(case: NumpyCase, weights: Mapping[str, np.ndarray], **config: Any) -> np.ndarray:
    return oracle.transformer_lm(case.inputs["in_indices"], weights, lm_config(case) | config)


def oracle_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A `transformer_lm_from_config` case's config in the oracle's keys: the upstream flags
    (SPEC) become `norm`, `norm_position`, `positions` and `ffn`."""
    cfg = {k: v for k, v in config.items() if k not in UPSTREAM_FLAGS}
    if config.get("remove_rmsnorm"):
        cfg["norm"] = "none"
    if config.get("use_post_norm"):
        cfg["norm_position"] = "post"
    if config.get("remove_rope"):
        cfg.setdefault("positions", "none")
    if config.get("ffn_type"):
        cfg["ffn"] = config["ffn_type"]
    return cfg


def run_config_lm(case: NumpyCase, config: Mapping[str, Any], **switches: Any) -> np.ndarray:
    if switches:
        return transformer_lm_with(case.inputs["in_indices"], case.weights, config, **switches)
    return oracle.transformer_lm(case.inputs["in_indices"], case.weights, config)


def block_change(
    change: Callable[[Mapping[str, np.ndarray], int], dict[str, np.ndarray] | None],
    final: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] = dict,
) -> dict[str, Variant]:
    """Variants for the block and both LM families from one change to a block's weights
    (`change(weights, num_heads)`, None where it cannot show), made in every layer of the LM;
    `final` then changes the LM's whole weight dict (`ln_final`, the head)."""

    def block(c: NumpyCase) -> np.ndarray | None:
        weights = change(c.weights, c.params["num_heads"])
        return None if weights is None else run_block(c, weights)

    def lm(c: NumpyCase) -> np.ndarray | None:
        weights = dict(c.weights)
        for i in range(c.params["num_layers"]):
            prefix = f"layers.{i}."
            layer = {k.removeprefix(prefix): v for k, v in weights.items() if k.startswith(prefix)}
            changed = change(layer, c.params["num_heads"])
            if changed is None:
                return None
            weights |= {prefix + k: v for k, v in changed.items()}
        return run_lm(c, final(weights))

    return {BLOCK: block} | dict.fromkeys(LM, lm)


def gain_names(weights: Mapping[str, np.ndarray]) -> list[str]:
    """The norms' gains: `ln1.weight`, `layers.0.ln2.weight`, `ln_final.weight`, ..."""
    return [k for k in weights if k.endswith(".weight") and k.split(".")[-2].startswith("ln")]


def unit_gains(weights: Mapping[str, np.ndarray], _: int = 0) -> dict[str, np.ndarray]:
    return dict(weights) | {k: np.ones_like(weights[k]) for k in gain_names(weights)}


def mha_block_change(change: Callable[..., dict[str, np.ndarray] | None]) -> Variant:
    """The attention-family variant of a block change (the block's `attn.` weights)."""
    names = ("q_proj", "k_proj", "v_proj", "output_proj")

    def variant(c: NumpyCase) -> np.ndarray | None:
        block = change(
            {f"attn.{n}.weight": c.weights[f"{n}.weight"] for n in names}, c.params["num_heads"]
        )
        return None if block is None else run_mha(c, [block[f"attn.{n}.weight"] for n in names])

    return variant


def mha_with(c: NumpyCase, **switches: Any) -> np.ndarray:
    return multihead_self_attention_with(
        c.inputs["in_features"], *mha_weights(c), c.params["num_heads"], **rope_args(c) | switches
    )


def lm_with(**switches: Any) -> Variant:
    return lambda c: transformer_lm_with(
        c.inputs["in_indices"], c.weights, lm_config(c), **switches
    )
