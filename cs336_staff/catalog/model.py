"""Known mistakes in how the block and the language model put their parts together."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cs336_harness.judging.diagnosis.numpy_cases import NumpyCase
from cs336_staff import oracle
from cs336_staff.catalog.mistake import Mistake, Variant
from cs336_staff.catalog.parts import Parts, everywhere
from cs336_staff.catalog.reading import (
    BLOCK,
    CONFIG_LM,
    LM,
    block_change,
    lm_config,
    lm_with,
    oracle_config,
    run_block,
    run_config_lm,
    run_lm,
)
from cs336_staff.oracle.model import DEFAULT_CONFIG
from cs336_staff.oracle.variants import block_with, transformer_lm_assembled_with

MISTAKES: list[Mistake] = []


MISTAKES.append(
    Mistake(
        "block_post_norm",
        "the block is post-norm, h = ln1(x + attn(x)); the block is pre-norm, "
        "h = x + attn(ln1(x)), out = h + ffn(ln2(h))",
        {BLOCK: lambda c: run_block(c, c.weights, norm_position="post")},
    )
)


def _shared_gain(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
    return dict(block) | {"ln2.weight": block["ln1.weight"]}


MISTAKES.append(
    Mistake(
        "block_norms_share_a_gain",
        "both norms of the block use ln1's gain; ln2 has its own weight",
        block_change(_shared_gain),
    )
)


MISTAKES.append(
    Mistake(
        "lm_without_final_norm",
        "the language model skips ln_final before the output head",
        dict.fromkeys(LM, lm_with(final_norm=False)),
    )
)


MISTAKES.append(
    Mistake(
        "lm_head_tied_to_embeddings",
        "the output head reads token_embeddings (tied), but the weights give lm_head its own "
        "matrix",
        dict.fromkeys(
            LM,
            lambda c: run_lm(
                c, c.weights | {"lm_head.weight": c.weights["token_embeddings.weight"]}
            ),
        ),
    )
)


def _lm_pads(c: NumpyCase) -> np.ndarray | None:
    ids, context = c.inputs["in_indices"], c.params["context_length"]
    seq = ids.shape[-1]
    if seq == context:
        return None
    padded = np.concatenate([np.zeros((*ids.shape[:-1], context - seq), ids.dtype), ids], -1)
    return oracle.transformer_lm(padded, c.weights, lm_config(c))[..., -seq:, :]


MISTAKES.append(
    Mistake(
        "lm_pads_short_inputs",
        "a short input is left-padded to context_length, and the padding leaks into attention; "
        "run a shorter sequence as it is",
        {"transformer_lm_truncated_input": _lm_pads},
    )
)


def _config_rope_pairing_ignored(c: NumpyCase) -> np.ndarray | None:
    cfg = oracle_config(c.params["config"])
    if cfg.get("rope_pairing") != "half" or cfg.get("positions", "rope") != "rope":
        return None
    return run_config_lm(c, cfg | {"rope_pairing": "interleaved"})


MISTAKES.append(
    Mistake(
        "config_rope_pairing_ignored",
        'the config\'s rope_pairing "half" is ignored: RoPE pairs interleaved dimensions anyway',
        {CONFIG_LM: _config_rope_pairing_ignored},
    )
)


def _config_positions_after_first_block(c: NumpyCase) -> np.ndarray | None:
    cfg = oracle_config(c.params["config"])
    if cfg.get("positions") != "learned":
        return None
    return run_config_lm(c, cfg, positions_after_first_block=True)


MISTAKES.append(
    Mistake(
        "learned_positions_after_first_block",
        "learned position embeddings are added to the first block's output; they are added to "
        "the token embeddings",
        {CONFIG_LM: _config_positions_after_first_block},
    )
)


def _assembled(**switches: Any) -> Callable[[NumpyCase], np.ndarray]:
    """The LM families' variant of a mistake in how the model is put together."""
    return lambda c: transformer_lm_assembled_with(
        c.inputs["in_indices"], c.weights, lm_config(c), **switches
    )


def _block_mistake(**switches: Any) -> dict[str, Variant]:
    """Variants for the block and both LM families (in every layer) of a block put together
    wrongly."""

    def block(c: NumpyCase) -> np.ndarray:
        config = DEFAULT_CONFIG | {"rope_theta": c.params["theta"]}
        return block_with(
            c.inputs["in_features"], c.weights, num_heads=c.params["num_heads"], config=config,
            **switches,
        )  # fmt: skip

    return {BLOCK: block} | dict.fromkeys(LM, _assembled(block=switches))


MISTAKES.append(
    Mistake(
        "block_attention_residual_dropped",
        "the block drops the residual around attention, h = attn(ln1(x)); it is "
        "h = x + attn(ln1(x))",
        _block_mistake(attn_residual=False),
    )
)


MISTAKES.append(
    Mistake(
        "block_ffn_residual_dropped",
        "the block drops the residual around the feed-forward, out = ffn(ln2(h)); it is "
        "out = h + ffn(ln2(h))",
        _block_mistake(ffn_residual=False),
    )
)


MISTAKES.append(
    Mistake(
        "block_ffn_reads_block_input",
        "the feed-forward reads ln2(x), the block's input; it reads ln2(h), h = x + attn(ln1(x))",
        _block_mistake(ffn_reads="x"),
    )
)


MISTAKES.append(
    Mistake(
        "block_ffn_reads_attention_output",
        "the feed-forward reads ln2(attn(ln1(x))), the attention's output without the "
        "residual; it reads ln2(h), h = x + attn(ln1(x))",
        _block_mistake(ffn_reads="attn"),
    )
)


MISTAKES.append(
    Mistake(
        "block_without_rope",
        "the block's attention applies no RoPE; queries and keys are rotated by RoPE "
        "(theta, positions 0 … seq-1)",
        _block_mistake(use_rope=False),
    )
)


def _swapped_gains(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
    return dict(block) | {"ln1.weight": block["ln2.weight"], "ln2.weight": block["ln1.weight"]}


MISTAKES.append(
    Mistake(
        "block_norm_gains_swapped",
        "ln1 and ln2 trade gains: the norm before attention uses ln2.weight and the one "
        "before the feed-forward ln1.weight; ln1 is the norm before attention",
        block_change(_swapped_gains),
    )
)


def _embedding_scaled(c: NumpyCase) -> np.ndarray:
    """In float32, as a float32 table times a Python float rounds: the embedding's test is
    exact, so the product's rounding is part of the mistake's output."""
    rows = np.asarray(c.weights["weight"], dtype=np.float32)[c.inputs["token_ids"]]
    return (rows * np.float32(math.sqrt(rows.shape[-1]))).astype(np.float64)


MISTAKES.append(
    Mistake(
        "lm_embeddings_scaled",
        "the token embeddings are multiplied by sqrt(d_model), in Embedding or in the model; a "
        "lookup returns the rows as the table holds them, and they enter the first block so",
        {"embedding": _embedding_scaled}
        | dict.fromkeys(
            LM, lambda c: _assembled(embedding_scale=math.sqrt(c.params["d_model"]))(c)
        ),
    )
)


MISTAKES.append(
    Mistake(
        "lm_final_norm_twice",
        "ln_final is applied twice before the head; it is applied once, to the last block's output",
        dict.fromkeys(LM, _assembled(final_norms=2)),
    )
)


MISTAKES.append(
    Mistake(
        "lm_returns_probabilities",
        "the model returns softmax probabilities; it returns the logits, unnormalised",
        dict.fromkeys(LM, _assembled(output="probabilities")),
    )
)


MISTAKES.append(
    Mistake(
        "lm_returns_log_probabilities",
        "the model returns log-softmax of the logits; it returns the logits, unnormalised",
        dict.fromkeys(LM, _assembled(output="log_probabilities")),
    )
)


def _deep(variant: Callable[[NumpyCase], np.ndarray]) -> Variant:
    """A variant of a mistake in how the layers follow one another: None with one layer."""
    return lambda c: None if c.params["num_layers"] == 1 else variant(c)


MISTAKES.append(
    Mistake(
        "lm_layers_share_one_block",
        "every layer is one and the same block (nn.ModuleList([block] * num_layers)), which "
        "ends up with the last layer's weights; each layer needs a block of its own",
        dict.fromkeys(LM, _deep(_assembled(layer_weights="last"))),
    )
)


MISTAKES.append(
    Mistake(
        "lm_blocks_not_chained",
        "each block reads the embeddings, not the previous block's output, so only the last "
        "block counts; x = block(x) in the loop",
        dict.fromkeys(LM, _deep(_assembled(chained=False))),
    )
)


def _config(change: Callable[[dict[str, Any]], dict[str, Any] | None], **switches: Any) -> Variant:
    """A `transformer_lm_from_config` variant: the model of the case's config as `change`
    makes it (None where the mistake cannot show), with `transformer_lm_assembled_with`'s
    `switches`."""

    def variant(c: NumpyCase) -> np.ndarray | None:
        cfg = change(oracle_config(c.params["config"]))
        if cfg is None:
            return None
        return transformer_lm_assembled_with(c.inputs["in_indices"], c.weights, cfg, **switches)

    return variant


MISTAKES.append(
    Mistake(
        "config_gelu_ffn_runs_silu",
        'the feed-forward of ffn "gelu" applies SiLU; it applies GELU (exact, or the tanh form '
        'where gelu_approximate is "tanh")',
        {
            CONFIG_LM: _config(
                lambda cfg: cfg | {"ffn": "silu"} if cfg.get("ffn") == "gelu" else None
            )
        },
    )
)


def _nope_with_rope(cfg: dict[str, Any]) -> dict[str, Any] | None:
    return cfg | {"positions": "rope"} if cfg.get("positions") == "none" else None


MISTAKES.append(
    Mistake(
        "config_nope_keeps_rope",
        'with positions "none" (or remove_rope) attention still applies RoPE; a model without '
        "positions rotates nothing",
        {CONFIG_LM: _config(_nope_with_rope)},
    )
)


def _learned(cfg: dict[str, Any]) -> dict[str, Any] | None:
    return cfg if cfg.get("positions") == "learned" else None


MISTAKES.append(
    Mistake(
        "config_learned_positions_keep_rope",
        'with positions "learned" attention still applies RoPE; learned position embeddings '
        "replace RoPE",
        {CONFIG_LM: _config(_learned, rope_with_learned_positions=True)},
    )
)


def _post_norm(cfg: dict[str, Any]) -> dict[str, Any] | None:
    post = cfg.get("norm_position") == "post" and cfg.get("norm", "rmsnorm") != "none"
    return cfg if post else None


MISTAKES.append(
    Mistake(
        "config_post_norm_on_sublayer_outputs",
        "post-norm normalises each sublayer's output, h = x + ln1(attn(x)); post-norm "
        "normalises the sum: h = ln1(x + attn(x)), out = ln2(h + ffn(h))",
        {CONFIG_LM: _config(_post_norm, block={"post_norm_on_sublayers": True})},
    )
)


MISTAKES.append(
    Mistake(
        "block_residual_from_normalised_input",
        "each residual is added to the normalised input, h = ln1(x) + attn(ln1(x)), out = "
        "ln2(h) + ffn(ln2(h)); the stream itself carries it: h = x + attn(ln1(x)), "
        "out = h + ffn(ln2(h))",
        everywhere(Parts(normalised_stream=True), (BLOCK, *LM)),
    )
)


MISTAKES.append(
    Mistake(
        "block_norm_on_sublayer_output",
        "each sublayer's output is normalised before the residual adds it, h = x + "
        "ln1(attn(x)), out = h + ln2(ffn(h)); the block is pre-norm: the sublayer reads the "
        "normalised stream, h = x + attn(ln1(x)), out = h + ffn(ln2(h))",
        _block_mistake(post_norm_on_sublayers=True),
    )
)


MISTAKES.append(
    Mistake(
        "block_attention_without_norm",
        "attention reads the block's input without ln1, h = x + attn(x); it reads the "
        "normalised input: h = x + attn(ln1(x))",
        everywhere(Parts(attention_norm=False), (BLOCK, *LM)),
    )
)


MISTAKES.append(
    Mistake(
        "lm_drops_last_layer",
        "the model runs num_layers - 1 blocks (range(num_layers - 1), or the last layer left "
        "out); every layer runs: for i in range(num_layers)",
        everywhere(Parts(layers=lambda n: range(n - 1)), LM),
    )
)


def _in_name_order(num_layers: int) -> list[int]:
    """The layers in the order of their names as strings: layers.0, layers.1, layers.10, …"""
    return sorted(range(num_layers), key=str)


def _reordered(order: Callable[[int], list[int]]) -> Variant:
    """The LM with its layers run in `order`; None where that is the index's."""
    lm = everywhere(Parts(layers=order), LM)["transformer_lm"]
    return lambda c: None if order(n := c.params["num_layers"]) == list(range(n)) else lm(c)


MISTAKES.append(
    Mistake(
        "lm_layers_in_name_order",
        "the layers run in the order of their names as strings, layers.0, layers.1, layers.10, "
        "layers.11, layers.2, … (sorted keys of the weights or of a ModuleDict), which differs "
        "from the index's only from 11 layers on; they run by index: 0, 1, 2, …",
        dict.fromkeys(LM, _reordered(_in_name_order)),
    )
)


MISTAKES.append(
    Mistake(
        "lm_every_layer_uses_first_weights",
        "every block runs the first layer's weights (layers.0); block i reads layers.{i}",
        {f: _deep(v) for f, v in everywhere(Parts(layers=lambda n: [0] * n), LM).items()},
    )
)
