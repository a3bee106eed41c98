"""Known mistakes in how the block and the language model put their parts together."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cs336_harness import oracle
from cs336_harness.diagnosis.catalog.mistake import Mistake
from cs336_harness.diagnosis.catalog.reading import (
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
from cs336_harness.diagnosis.numpy_cases import NumpyCase

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
