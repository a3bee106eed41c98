"""Known mistakes in RoPE, scaled dot-product attention and multi-head self-attention (and
where each shows in the block and the LM)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from cs336_harness import oracle
from cs336_harness.diagnosis.catalog.mistake import Mistake, Variant
from cs336_harness.diagnosis.catalog.reading import (
    BLOCK,
    LM,
    MHA,
    MHA_ROPE,
    block_change,
    custom_positions,
    f64,
    lm_with,
    mha_block_change,
    mha_weights,
    mha_with,
    run_block,
    run_lm,
    run_mha,
)
from cs336_harness.diagnosis.numpy_cases import NumpyCase
from cs336_harness.oracle.variants import (
    non_causal_block,
)

MISTAKES: list[Mistake] = []


def _rope(c: NumpyCase, positions=None, theta=None, pairing="interleaved") -> np.ndarray:
    x = c.inputs["in_query_or_key"]
    pos = c.inputs["token_positions"] if positions is None else positions
    return oracle.rope(x, pos, c.params["theta"] if theta is None else theta, pairing)


MISTAKES.append(
    Mistake(
        "rope_rotate_half",
        'RoPE pairs x[k] with x[k + d_k/2] ("rotate half"); this assignment pairs x[2k] with '
        "x[2k+1]",
        {
            "rope": lambda c: _rope(c, pairing="half"),
            MHA_ROPE: lambda c: run_mha(c, mha_weights(c), pairing="half"),
            BLOCK: lambda c: run_block(c, c.weights, rope_pairing="half"),
        }
        | dict.fromkeys(LM, lambda c: run_lm(c, c.weights, rope_pairing="half")),
    )
)


def _rope_positions_ignored(c: NumpyCase) -> np.ndarray | None:
    x = c.inputs["in_query_or_key"]
    return None if custom_positions(c, x) is None else _rope(c, positions=np.arange(x.shape[-2]))


def _mha_rope_positions_ignored(c: NumpyCase) -> np.ndarray | None:
    """Attention with RoPE sees only the offsets between positions: positions p₀ + 0 … seq−1
    give the same output as 0 … seq−1."""
    pos = custom_positions(c, c.inputs["in_features"])
    if pos is None or np.array_equal(
        pos - pos[..., :1], np.broadcast_to(np.arange(pos.shape[-1]), pos.shape)
    ):
        return None
    return run_mha(c, mha_weights(c), positions=None)


MISTAKES.append(
    Mistake(
        "rope_ignores_positions",
        "RoPE ignores token_positions and rotates by 0 … seq-1",
        {"rope": _rope_positions_ignored, MHA_ROPE: _mha_rope_positions_ignored},
    )
)


FIXED_THETA = 10000.0


def _theta(c: NumpyCase) -> float:
    return c.params["rope_theta" if c.family in LM else "theta"]


def _theta_fixed(variant: Callable[[NumpyCase], np.ndarray]) -> Variant:
    return lambda c: None if _theta(c) == FIXED_THETA else variant(c)


MISTAKES.append(
    Mistake(
        "rope_theta_fixed",
        "RoPE uses Θ = 10000 whatever theta is given",
        {
            "rope": _theta_fixed(lambda c: _rope(c, theta=FIXED_THETA)),
            MHA_ROPE: _theta_fixed(lambda c: run_mha(c, mha_weights(c), theta=FIXED_THETA)),
            BLOCK: _theta_fixed(lambda c: run_block(c, c.weights, rope_theta=FIXED_THETA)),
        }
        | dict.fromkeys(LM, _theta_fixed(lambda c: run_lm(c, c.weights, rope_theta=FIXED_THETA))),
    )
)


def _scaled_q(c: NumpyCase, d_k: int) -> np.ndarray:
    return f64(c.inputs["Q"]) * math.sqrt(d_k)


def _attention_unscaled(c: NumpyCase) -> np.ndarray:
    q = c.inputs["Q"]
    return oracle.scaled_dot_product_attention(
        _scaled_q(c, q.shape[-1]), c.inputs["K"], c.inputs["V"], c.inputs.get("mask")
    )


def _unscaled(block: Mapping[str, np.ndarray], num_heads: int) -> dict[str, np.ndarray]:
    """A block whose scores come out unscaled from the oracle, which divides them by √d_k:
    its query projection times √d_k (RoPE is linear, so it commutes with the factor)."""
    q = block["attn.q_proj.weight"]
    return dict(block) | {"attn.q_proj.weight": f64(q) * math.sqrt(q.shape[0] // num_heads)}


MISTAKES.append(
    Mistake(
        "attention_unscaled",
        "attention scores are not divided by sqrt(d_k)",
        {
            "scaled_dot_product_attention": _attention_unscaled,
            MHA: mha_block_change(_unscaled),
            MHA_ROPE: mha_block_change(_unscaled),
        }
        | block_change(_unscaled),
    )
)


def _attention_d_v(c: NumpyCase) -> np.ndarray | None:
    d_k, d_v = c.inputs["Q"].shape[-1], c.inputs["V"].shape[-1]
    if d_k == d_v:
        return None
    q = _scaled_q(c, d_k) / math.sqrt(d_v)
    return oracle.scaled_dot_product_attention(
        q, c.inputs["K"], c.inputs["V"], c.inputs.get("mask")
    )


MISTAKES.append(
    Mistake(
        "attention_scaled_by_d_v",
        "attention scores are divided by sqrt(d_v); the scale is 1 / sqrt(d_k), the queries' "
        "and keys' width",
        {"scaled_dot_product_attention": _attention_d_v},
    )
)


def _fully_masked_rows(c: NumpyCase) -> np.ndarray | None:
    mask = c.inputs.get("mask")
    if mask is None:
        return None
    shape = (*c.inputs["Q"].shape[:-1], c.inputs["K"].shape[-2])
    empty = ~np.broadcast_to(mask, np.broadcast_shapes(mask.shape, shape)).any(-1)
    return empty if empty.any() else None


def _attention_nan_rows(c: NumpyCase) -> np.ndarray | None:
    empty = _fully_masked_rows(c)
    if empty is None:
        return None
    x = c.inputs
    correct = oracle.scaled_dot_product_attention(x["Q"], x["K"], x["V"], x["mask"])
    return np.where(empty[..., None], np.nan, correct)


MISTAKES.append(
    Mistake(
        "attention_nan_on_fully_masked_row",
        "a query whose keys are all masked gets NaN (a softmax over -inf only); its output is "
        "zeros here",
        {"scaled_dot_product_attention": _attention_nan_rows},
    )
)


def _attention_mask_inverted(c: NumpyCase) -> np.ndarray | None:
    mask = c.inputs.get("mask")
    if mask is None:
        return None
    return oracle.scaled_dot_product_attention(c.inputs["Q"], c.inputs["K"], c.inputs["V"], ~mask)


MISTAKES.append(
    Mistake(
        "attention_mask_inverted",
        "the mask is applied inverted: True means the query may attend to that key",
        {"scaled_dot_product_attention": _attention_mask_inverted},
    )
)


def _not_causal_block(c: NumpyCase) -> np.ndarray:
    p = c.params
    return non_causal_block(
        c.inputs["in_features"], c.weights, num_heads=p["num_heads"], theta=p["theta"]
    )


MISTAKES.append(
    Mistake(
        "attention_not_causal",
        "self-attention has no causal mask: query i may attend only to keys 0 … i",
        {
            MHA: lambda c: mha_with(c, causal=False),
            MHA_ROPE: lambda c: mha_with(c, causal=False),
            BLOCK: _not_causal_block,
        }
        | dict.fromkeys(LM, lm_with(causal=False)),
    )
)


def _strided(block: Mapping[str, np.ndarray], num_heads: int) -> dict[str, np.ndarray] | None:
    """A block whose correct head split computes the strided one (head h's j-th feature is
    feature j·H + h of each projection, and the same order goes back into the output
    projection): rows of q/k/v and columns of the output projection permuted."""
    if num_heads == 1:
        return None
    d_model = block["attn.q_proj.weight"].shape[0]
    order = np.arange(d_model).reshape(d_model // num_heads, num_heads).T.reshape(-1)
    out = dict(block)
    for p in ("q_proj", "k_proj", "v_proj"):
        out[f"attn.{p}.weight"] = block[f"attn.{p}.weight"][order]
    out["attn.output_proj.weight"] = block["attn.output_proj.weight"][:, order]
    return out


MISTAKES.append(
    Mistake(
        "attention_heads_strided",
        "heads are split as strided features (head h = features h, h+H, h+2H, …); head h is "
        "the contiguous block h·d_k … (h+1)·d_k - 1 of each projection",
        {MHA: mha_block_change(_strided), MHA_ROPE: mha_block_change(_strided)}
        | block_change(_strided),
    )
)


MISTAKES.append(
    Mistake(
        "rope_on_values",
        "RoPE is applied to the values as well; it rotates only the queries and the keys",
        {MHA_ROPE: lambda c: mha_with(c, rotated=("q", "k", "v"))},
    )
)


MISTAKES.append(
    Mistake(
        "rope_on_queries_only",
        "RoPE rotates the queries but not the keys; both are rotated",
        {MHA_ROPE: lambda c: mha_with(c, rotated=("q",))},
    )
)
