"""Known mistakes in RoPE, scaled dot-product attention and multi-head self-attention (and
where each shows in the block and the LM)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from cs336_harness.judging.diagnosis.numpy_cases import NumpyCase
from cs336_staff import oracle
from cs336_staff.catalog.mistake import Mistake, Variant
from cs336_staff.catalog.parts import Parts, everywhere
from cs336_staff.catalog.reading import (
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
from cs336_staff.oracle.variants import (
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


# float32 rounds a dot product to about 2⁻²⁴ of its terms: a relative jitter of the queries
# this size stands for that rounding, a few times over.
FLOAT32_JITTER = 1e-6
# Where the jitter moves an output element by more than this (relative, and absolute near
# 0), a float32 implementation's value is a draw rather than a value: half the tightest
# tolerance of the attention families (5e-6).
UNSTABLE = 2.5e-6


def _jittered(q: np.ndarray, jitter: float) -> np.ndarray:
    noise = np.random.default_rng(0).standard_normal(np.shape(q))  # fixed: one answer per case
    return f64(q) * (1.0 + jitter * noise)


def _conditioned(variant: Callable[[NumpyCase, float], np.ndarray | None]) -> Variant:
    """`variant(case, jitter)`, its elements that the queries' jitter moves by more than
    UNSTABLE masked (left out of the fingerprint); None where that is every element."""

    def conditioned(c: NumpyCase) -> np.ndarray | None:
        out, moved = variant(c, 0.0), variant(c, FLOAT32_JITTER)
        if out is None or moved is None:
            return None
        unstable = np.abs(moved - out) > UNSTABLE * (1.0 + np.abs(out))
        if unstable.all():
            return None
        return np.ma.masked_array(out, unstable) if unstable.any() else out

    return conditioned


def _queries_times(factor: Callable[[int], float], families: tuple[str, ...]) -> dict[str, Variant]:
    """Variants of scores that come out of the oracle, which divides them by √d_k, times
    `factor(d_k)` / √d_k: the queries, or the query projection, times `factor(d_k)` (RoPE is
    linear, so it commutes with the factor), jittered and conditioned (`_conditioned`)."""

    def attention(c: NumpyCase, jitter: float) -> np.ndarray:
        q = _jittered(c.inputs["Q"], jitter)
        return oracle.scaled_dot_product_attention(
            q * factor(q.shape[-1]), c.inputs["K"], c.inputs["V"], c.inputs.get("mask")
        )

    def change(jitter: float):
        def changed(block: Mapping[str, np.ndarray], num_heads: int) -> dict[str, np.ndarray]:
            q = block["attn.q_proj.weight"]
            return dict(block) | {
                "attn.q_proj.weight": _jittered(q, jitter) * factor(q.shape[0] // num_heads)
            }

        return changed

    def assembled(family: str) -> Callable[[NumpyCase, float], np.ndarray | None]:
        if family in (MHA, MHA_ROPE):
            return lambda c, jitter: mha_block_change(change(jitter))(c)
        return lambda c, jitter: block_change(change(jitter))[family](c)

    return {
        family: _conditioned(
            attention if family == "scaled_dot_product_attention" else assembled(family)
        )
        for family in families
    }


MISTAKES.append(
    Mistake(
        "attention_unscaled",
        "attention scores are not divided by sqrt(d_k)",
        # Scores √d_k times too large sharpen the softmax, and a model's layers stack it: a
        # float32 model parts from the float64 variant where two scores nearly tie (by 1.17
        # times the tolerance, 3 logits of a two-layer model on seed 3009 of the sweep):
        # those elements are masked, as for scores times √d_k below.
        _queries_times(math.sqrt, ("scaled_dot_product_attention", MHA, MHA_ROPE, BLOCK, *LM)),
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
        "self-attention has no causal mask (or makes one and never applies it): query i may "
        "attend only to keys 0 … i",
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


def rotate(
    x: np.ndarray,
    positions: np.ndarray,
    theta: float,
    *,
    exponent: float = 2.0,
    swap: bool = False,
    reverse: bool = False,
    shift: int = 0,
) -> np.ndarray:
    """Interleaved RoPE with its mistakes as switches: pair k at position p (plus `shift`)
    turns by p·Θ^(-exponent·k/d_k), with cos and sin swapped (`swap`) or the angle negated
    (`reverse`)."""
    x = f64(x)
    d_k = x.shape[-1]
    pos = np.broadcast_to(positions, x.shape[:-1]).astype(np.float64) + shift
    angle = pos[..., None] * float(theta) ** (-exponent * np.arange(d_k // 2) / d_k)
    cos, sin = np.cos(angle), np.sin(angle)
    if swap:
        cos, sin = sin, cos
    if reverse:
        sin = -sin
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * cos - b * sin, a * sin + b * cos
    return out


def _rope_family(**mistake) -> Variant:
    return lambda c: rotate(
        c.inputs["in_query_or_key"], c.inputs["token_positions"], c.params["theta"], **mistake
    )


def _several_heads(variants: Mapping[str, Variant]) -> dict[str, Variant]:
    """`variants` where there are several heads; None with one (d_k is d_model)."""
    return {
        family: (lambda v: lambda c: None if c.params["num_heads"] == 1 else v(c))(variant)
        for family, variant in variants.items()
    }


MISTAKES.append(
    Mistake(
        "rope_cos_sin_swapped",
        "RoPE swaps cos and sin, (a sin - b cos, a cos + b sin); the rotation is "
        "(a cos - b sin, a sin + b cos)",
        {"rope": _rope_family(swap=True)}
        | everywhere(
            Parts(rope=lambda q, pos, theta: rotate(q, pos, theta, swap=True)),
            (MHA_ROPE, BLOCK, *LM),
        ),
    )
)


MISTAKES.append(
    Mistake(
        "rope_rotation_reversed",
        "RoPE rotates the wrong way, (a cos + b sin, -a sin + b cos); the rotation is "
        "(a cos - b sin, a sin + b cos)",
        # In attention both queries and keys turn by π/2 - angle with cos and sin swapped,
        # and by -angle reversed: their dot products are the same, so the two are one output
        # under two names there, and only RoPE's own output tells them apart.
        {"rope": _rope_family(reverse=True)}
        | everywhere(
            Parts(rope=lambda q, pos, theta: rotate(q, pos, theta, reverse=True)),
            (MHA_ROPE, BLOCK, *LM),
        ),
    )
)


MISTAKES.append(
    Mistake(
        "rope_frequencies_k_over_d",
        "RoPE's frequencies are Θ^(-k/d_k); pair k turns at Θ^(-2k/d_k) (k = 0 … d_k/2 - 1)",
        {"rope": _rope_family(exponent=1.0)}
        | everywhere(
            Parts(rope=lambda q, pos, theta: rotate(q, pos, theta, exponent=1.0)),
            (MHA_ROPE, BLOCK, *LM),
        ),
    )
)


MISTAKES.append(
    Mistake(
        "rope_positions_from_one",
        "RoPE rotates position p by the angle of p + 1 (positions counted from 1); the first "
        "position is 0 and is not rotated",
        # Attention sees only differences of positions: the shift shows in RoPE alone.
        {"rope": _rope_family(shift=1)},
    )
)


def _rope_before_split(q: np.ndarray, pos: np.ndarray, theta: float) -> np.ndarray:
    """The heads `(..., H, seq, d_k)` joined back into `(..., seq, d_model)`, rotated as one
    vector (pair j of head h is pair h·d_k/2 + j of d_model), and split again."""
    heads, d_k = q.shape[-3], q.shape[-1]
    joined = np.swapaxes(q, -2, -3).reshape(*q.shape[:-3], q.shape[-2], heads * d_k)
    rotated = rotate(joined, pos[..., 0, :], theta)
    return np.swapaxes(rotated.reshape(*joined.shape[:-1], heads, d_k), -2, -3)


MISTAKES.append(
    Mistake(
        "rope_before_head_split",
        "RoPE rotates the whole d_model-wide query and key before they are split into heads; "
        "split first, then rotate each head's d_k features with pairs k = 0 … d_k/2 - 1",
        _several_heads(everywhere(Parts(rope=_rope_before_split), (MHA_ROPE, BLOCK, *LM))),
    )
)


def _attention_d_k(c: NumpyCase) -> np.ndarray:
    q = f64(c.inputs["Q"])
    return oracle.scaled_dot_product_attention(
        q / math.sqrt(q.shape[-1]), c.inputs["K"], c.inputs["V"], c.inputs.get("mask")
    )


def _scaled_by_d_k(block: Mapping[str, np.ndarray], num_heads: int) -> dict[str, np.ndarray]:
    """A block whose scores the oracle divides by √d_k once more: the query projection over
    √d_k."""
    q = block["attn.q_proj.weight"]
    return dict(block) | {"attn.q_proj.weight": f64(q) / math.sqrt(q.shape[0] // num_heads)}


MISTAKES.append(
    Mistake(
        "attention_scaled_by_d_k",
        "attention scores are divided by d_k; they are divided by sqrt(d_k)",
        {
            "scaled_dot_product_attention": _attention_d_k,
            MHA: mha_block_change(_scaled_by_d_k),
            MHA_ROPE: mha_block_change(_scaled_by_d_k),
        }
        | block_change(_scaled_by_d_k),
    )
)


def _scaled_by_d_model(
    block: Mapping[str, np.ndarray], num_heads: int
) -> dict[str, np.ndarray] | None:
    """A block whose scores come out over √d_model: the query projection over √num_heads.
    None with one head (d_model is d_k) and where d_k = num_heads (√d_model is d_k, the
    mistake above)."""
    d_k = block["attn.q_proj.weight"].shape[0] // num_heads
    if num_heads in (1, d_k):
        return None
    q = f64(block["attn.q_proj.weight"])
    return dict(block) | {"attn.q_proj.weight": q / math.sqrt(num_heads)}


MISTAKES.append(
    Mistake(
        "attention_scaled_by_sqrt_d_model",
        "multi-head attention divides the scores by sqrt(d_model); each head's scores are "
        "divided by sqrt(d_k), d_k = d_model / num_heads",
        {MHA: mha_block_change(_scaled_by_d_model), MHA_ROPE: mha_block_change(_scaled_by_d_model)}
        | block_change(_scaled_by_d_model),
    )
)


MISTAKES.append(
    Mistake(
        "attention_causal_mask_hides_diagonal",
        "the causal mask also hides the diagonal (torch.tril(..., diagonal=-1)), so a query "
        "cannot attend to its own position; query i attends keys 0 … i, itself included",
        everywhere(Parts(mask=lambda seq: np.tril(np.ones((seq, seq), dtype=bool), -1))),
    )
)


MISTAKES.append(
    Mistake(
        "attention_causal_mask_upper_triangle",
        "the causal mask is the upper triangle, so query i attends keys i … seq-1 (the "
        "future); it is the lower triangle: keys 0 … i",
        everywhere(Parts(mask=lambda seq: np.triu(np.ones((seq, seq), dtype=bool)))),
    )
)


def _scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    return f64(q) @ np.swapaxes(f64(k), -1, -2) / math.sqrt(q.shape[-1])


def _softmax(scores: np.ndarray, allowed: np.ndarray, axis: int) -> np.ndarray:
    """Softmax along `axis` over the allowed entries; masked ones, and a slice with none
    allowed, get 0."""
    top = np.max(np.where(allowed, scores, -np.inf), axis=axis, keepdims=True)
    e = np.where(allowed, np.exp(scores - np.where(np.isfinite(top), top, 0.0)), 0.0)
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def _mask_after_softmax(q, k, v, mask) -> np.ndarray | None:
    if mask is None:
        return None
    s = _scores(q, k)
    return _softmax(s, np.ones_like(s, dtype=bool), -1) * mask @ f64(v)


def _mask_added(q, k, v, mask) -> np.ndarray | None:
    if mask is None:
        return None
    scores = _scores(q, k) + mask
    return _softmax(scores, np.ones_like(scores, dtype=bool), -1) @ f64(v)


def _softmax_over_queries(q, k, v, mask) -> np.ndarray:
    s = _scores(q, k)
    allowed = np.ones_like(s, dtype=bool) if mask is None else np.broadcast_to(mask, s.shape)
    return _softmax(np.broadcast_to(s, allowed.shape), allowed, -2) @ f64(v)


def _sdpa(mistaken) -> Variant:
    return lambda c: mistaken(c.inputs["Q"], c.inputs["K"], c.inputs["V"], c.inputs.get("mask"))


MISTAKES.append(
    Mistake(
        "attention_mask_after_softmax",
        "the mask is applied after the softmax (masked probabilities zeroed), so the rest no "
        "longer sum to 1; fill masked scores with -inf before the softmax",
        {"scaled_dot_product_attention": _sdpa(_mask_after_softmax)}
        | everywhere(Parts(attention=_mask_after_softmax)),
    )
)


MISTAKES.append(
    Mistake(
        "attention_mask_added_to_scores",
        "the boolean mask is added to the scores (True as +1, False as 0); masked scores are "
        "set to -inf before the softmax",
        {"scaled_dot_product_attention": _sdpa(_mask_added)}
        | everywhere(Parts(attention=_mask_added)),
    )
)


MISTAKES.append(
    Mistake(
        "attention_softmax_over_queries",
        "the attention softmax normalises over the queries (dim=-2, or dim=1 of 3-D scores); "
        "each query's weights over the keys sum to 1: softmax over the last dimension",
        {"scaled_dot_product_attention": _sdpa(_softmax_over_queries)}
        | everywhere(Parts(attention=_softmax_over_queries)),
    )
)


def _keys_values_swapped(q, k, v, mask) -> np.ndarray | None:
    if np.shape(k) != np.shape(v):
        return None
    return oracle.scaled_dot_product_attention(q, v, k, mask)


def _swapped(first: str, second: str):
    def change(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
        a, b = f"attn.{first}.weight", f"attn.{second}.weight"
        return dict(block) | {a: block[b], b: block[a]}

    return change


MISTAKES.append(
    Mistake(
        "attention_keys_values_swapped",
        "attention takes the values as keys and the keys as values, softmax(Q Vᵀ / sqrt(d_k)) "
        "K; it is softmax(Q Kᵀ / sqrt(d_k)) V",
        {"scaled_dot_product_attention": _sdpa(_keys_values_swapped)}
        | everywhere(Parts(attention=_keys_values_swapped)),
    )
)


MISTAKES.append(
    Mistake(
        "attention_q_k_projections_swapped",
        "the query projection is applied with k_proj's weight and the key projection with "
        "q_proj's; q = x W_qᵀ, k = x W_kᵀ",
        {
            MHA: mha_block_change(_swapped("q_proj", "k_proj")),
            MHA_ROPE: mha_block_change(_swapped("q_proj", "k_proj")),
        }
        | block_change(_swapped("q_proj", "k_proj")),
    )
)


def _without_output(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
    o = block["attn.output_proj.weight"]
    return dict(block) | {"attn.output_proj.weight": np.eye(o.shape[0])}


MISTAKES.append(
    Mistake(
        "attention_without_output_projection",
        "multi-head attention returns the concatenated heads without the output projection; "
        "it ends with output_proj",
        {MHA: mha_block_change(_without_output), MHA_ROPE: mha_block_change(_without_output)}
        | block_change(_without_output),
    )
)


def _output_transposed(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
    return dict(block) | {"attn.output_proj.weight": f64(block["attn.output_proj.weight"]).T}


MISTAKES.append(
    Mistake(
        "attention_output_projection_transposed",
        "the output projection multiplies by W_o instead of W_oᵀ; like every Linear it "
        "computes heads @ W_o.T",
        {
            MHA: mha_block_change(_output_transposed),
            MHA_ROPE: mha_block_change(_output_transposed),
        }
        | block_change(_output_transposed),
    )
)


def _merged_feature_major(
    block: Mapping[str, np.ndarray], num_heads: int
) -> dict[str, np.ndarray] | None:
    """Heads merged as (d_k, heads), feature j of head h at j·H + h, where the output
    projection reads h·d_k + j: its columns permuted."""
    if num_heads == 1:
        return None
    d_model = block["attn.output_proj.weight"].shape[0]
    order = np.arange(d_model).reshape(d_model // num_heads, num_heads).T.reshape(-1)
    return dict(block) | {"attn.output_proj.weight": block["attn.output_proj.weight"][:, order]}


MISTAKES.append(
    Mistake(
        "attention_heads_merged_feature_major",
        "the heads are merged feature-major ('... h s d -> ... s (d h)'), interleaving them; "
        "concatenate them head after head: '... h s d -> ... s (h d)'",
        {
            MHA: mha_block_change(_merged_feature_major),
            MHA_ROPE: mha_block_change(_merged_feature_major),
        }
        | block_change(_merged_feature_major),
    )
)


def _mask_filled_with_zero(q, k, v, mask) -> np.ndarray | None:
    if mask is None or np.all(mask):
        return None
    scores = np.where(mask, _scores(q, k), 0.0)
    return _softmax(scores, np.ones_like(scores, dtype=bool), -1) @ f64(v)


MISTAKES.append(
    Mistake(
        "attention_mask_filled_with_zero",
        "masked scores are set to 0 (masked_fill(~mask, 0), or the scores times the mask), and "
        "exp(0) still weighs those keys; fill them with -inf so that masked keys get no weight",
        {"scaled_dot_product_attention": _sdpa(_mask_filled_with_zero)}
        | everywhere(Parts(attention=_mask_filled_with_zero)),
    )
)


def _mask_ignored(c: NumpyCase) -> np.ndarray | None:
    mask = c.inputs.get("mask")
    if mask is None or np.all(mask):
        return None
    return oracle.scaled_dot_product_attention(c.inputs["Q"], c.inputs["K"], c.inputs["V"])


MISTAKES.append(
    Mistake(
        "attention_mask_ignored",
        "the mask is never applied, so every query attends to every key; masked scores are "
        "set to -inf before the softmax",
        # In multi-head attention an ignored mask is `attention_not_causal`, whose line says so.
        {"scaled_dot_product_attention": _mask_ignored},
    )
)


def _mask_finite(c: NumpyCase) -> np.ndarray | None:
    """A large finite fill (-1e9): the same as -inf wherever a query may attend some key; a
    query whose keys are all masked averages all of V instead of getting zeros."""
    empty = _fully_masked_rows(c)
    if empty is None:
        return None
    x = c.inputs
    correct = oracle.scaled_dot_product_attention(x["Q"], x["K"], x["V"], x["mask"])
    average = np.broadcast_to(f64(x["V"]).mean(-2, keepdims=True), correct.shape)
    return np.where(empty[..., None], average, correct)


MISTAKES.append(
    Mistake(
        "attention_masked_with_finite_minimum",
        "masked scores are filled with a large finite negative (-1e9, finfo.min), so a query "
        "whose keys are all masked averages every value; fill with -inf (such a query's "
        "output is zeros here)",
        {"scaled_dot_product_attention": _mask_finite},
    )
)


def _softmax_dim_1(q, k, v, mask) -> np.ndarray | None:
    """Softmax along axis 1 of the scores: the heads for (batch, heads, queries, keys), the
    queries for 3-D ones. Masked scores are -inf along that axis too, so a slice of them is
    0/0, NaN, and a NaN probability makes its query's whole output NaN. On 3-D scores without
    such a slice this is `attention_softmax_over_queries`' output, so None there."""
    s = _scores(q, k)
    allowed = np.ones_like(s, dtype=bool) if mask is None else np.broadcast_to(mask, s.shape)
    empty = ~allowed.any(axis=1, keepdims=True)
    if s.ndim <= 3 and not empty.any():
        return None
    masked = np.where(allowed, s, -np.inf)
    top = masked.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(masked - top)
        p = e / e.sum(axis=1, keepdims=True)
    return p @ f64(v)


MISTAKES.append(
    Mistake(
        "attention_softmax_over_dim_1",
        "the attention softmax is taken over dim=1: the heads of (batch, heads, queries, "
        "keys) scores, the queries of 3-D ones (a key no query may see gives NaN); each "
        "query's weights over the keys sum to 1: softmax over dim=-1",
        {"scaled_dot_product_attention": _sdpa(_softmax_dim_1)}
        | everywhere(Parts(attention=_softmax_dim_1)),
    )
)


def _split_without_transpose(t: np.ndarray, num_heads: int) -> np.ndarray:
    *lead, seq, d_model = t.shape
    return t.reshape(*lead, num_heads, seq, d_model // num_heads)


def _merge_without_transpose(o: np.ndarray) -> np.ndarray:
    heads, seq, d_k = o.shape[-3:]
    return o.reshape(*o.shape[:-3], seq, heads * d_k)


MISTAKES.append(
    Mistake(
        "attention_heads_split_without_transpose",
        "the heads are split with a reshape to (..., heads, seq, d_k) and no transpose, "
        "which deals each head a slice of the flattened (seq, d_model) block; reshape to "
        "(..., seq, heads, d_k), then transpose to (..., heads, seq, d_k)",
        _several_heads(everywhere(Parts(split=_split_without_transpose))),
    )
)


MISTAKES.append(
    Mistake(
        "attention_heads_merged_without_transpose",
        "the heads are merged with a reshape of (..., heads, seq, d_k) to (..., seq, d_model) "
        "and no transpose, which scrambles positions and heads; transpose to (..., seq, "
        "heads, d_k) first (or rearrange '... h s d -> ... s (h d)')",
        _several_heads(everywhere(Parts(merge=_merge_without_transpose))),
    )
)


MISTAKES.append(
    Mistake(
        "attention_heads_split_and_merged_without_transpose",
        "the heads are split and merged with reshapes and no transpose, (..., seq, d_model) "
        "to (..., heads, seq, d_k) and back; reshape to (..., seq, heads, d_k) and transpose "
        "the heads before the positions (and back before merging)",
        _several_heads(
            everywhere(Parts(split=_split_without_transpose, merge=_merge_without_transpose))
        ),
    )
)


def _untransposed(*names: str):
    def change(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
        return dict(block) | {f"attn.{n}.weight": f64(block[f"attn.{n}.weight"]).T for n in names}

    return change


def _projection_mistake(*names: str) -> dict[str, Variant]:
    change = _untransposed(*names)
    return {MHA: mha_block_change(change), MHA_ROPE: mha_block_change(change)} | block_change(
        change
    )


MISTAKES.append(
    Mistake(
        "attention_qkv_projections_not_transposed",
        "the query, key and value projections compute x @ W; each weight is stored "
        "(d_out, d_in), so a projection is x @ W.T, as every Linear",
        _projection_mistake("q_proj", "k_proj", "v_proj"),
    )
)


MISTAKES.append(
    Mistake(
        "attention_projections_not_transposed",
        "every projection of the attention, the output's included, computes x @ W; each "
        "weight is stored (d_out, d_in), so a projection is x @ W.T, as every Linear",
        _projection_mistake("q_proj", "k_proj", "v_proj", "output_proj"),
    )
)


def _rope_part(rope: Callable[..., np.ndarray]) -> Variant:
    """The `rope` family's variant of a RoPE written as a part."""
    return lambda c: rope(
        c.inputs["in_query_or_key"], c.inputs["token_positions"], c.params["theta"]
    )


def _rope_concatenated(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """Pairs interleaved, (x[2k], x[2k+1]), but cos and sin laid out as cat([f, f]): element
    i turns by the angle of frequency i mod d_k/2, so a pair's two elements turn by
    different angles."""
    x = f64(x)
    d_k = x.shape[-1]
    pos = np.broadcast_to(positions, x.shape[:-1]).astype(np.float64)
    angle = pos[..., None] * float(theta) ** (-2.0 * (np.arange(d_k) % (d_k // 2)) / d_k)
    partner = np.empty_like(x)
    partner[..., 0::2], partner[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return x * np.cos(angle) + partner * np.sin(angle)


MISTAKES.append(
    Mistake(
        "rope_frequencies_concatenated",
        "RoPE lays cos and sin out as two copies of the d_k/2 frequencies, cat([f, f]) (the "
        "rotate-half layout), while its pairs are interleaved; x[2k] and x[2k+1] share "
        "frequency k: repeat_interleave(f, 2)",
        {"rope": _rope_part(_rope_concatenated)}
        | everywhere(Parts(rope=_rope_concatenated), (MHA_ROPE, BLOCK, *LM)),
    )
)


def _rope_diagonal(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """Each element times the cosine of its pair's angle: the rotation matrix's diagonal."""
    x = f64(x)
    d_k = x.shape[-1]
    pos = np.broadcast_to(positions, x.shape[:-1]).astype(np.float64)
    angle = pos[..., None] * float(theta) ** (-2.0 * (np.arange(d_k) // 2) / d_k)
    return x * np.cos(angle)


MISTAKES.append(
    Mistake(
        "rope_rotation_diagonal_only",
        "RoPE multiplies x by cos alone, the rotation matrix's diagonal (an einsum that gives "
        "both of its axes one name, '... d, ... d d -> ... d'); each pair turns: "
        "(a cos - b sin, a sin + b cos)",
        {"rope": _rope_part(_rope_diagonal)}
        | everywhere(Parts(rope=_rope_diagonal), (MHA_ROPE, BLOCK, *LM)),
    )
)


MISTAKES.append(
    Mistake(
        "attention_multiplied_by_sqrt_d_k",
        "attention scores are multiplied by sqrt(d_k); they are divided by it: Q Kᵀ / sqrt(d_k)",
        # Scores d_k times too large make a softmax so sharp that a float32 implementation's
        # output parts from the float64 one where two scores nearly tie: those elements are
        # masked (seeds 3 and 7 of the sweep, a model's and a block's). Not the LMs': stacked,
        # the saturated softmax can equal attention_unscaled's output (seeds 6 and 7).
        _queries_times(lambda d_k: d_k, ("scaled_dot_product_attention", MHA, MHA_ROPE, BLOCK)),
    )
)


# A float32 angle is good to 2⁻²⁴ of itself, and its frequency to as much: up to this many
# radians the rotation stays within RoPE's tolerance of the float64 one, well beyond it not.
FLOAT32_ANGLE_LIMIT = 50.0
# A difference this large (relative) is far beyond any family's tolerance.
CLEAR_MARGIN = 1e-3


def _rope_inverted(c: NumpyCase) -> np.ndarray | None:
    """RoPE at Θ^(2k/d_k): angles of thousands of radians, which a float32 implementation
    cannot hold to the tolerance; those pairs are masked (left out of the fingerprint). None
    where the pairs left differ from the truth by no clear margin (pair 0 turns at Θ⁰ = 1
    either way; pair 1 only at positions below the limit over Θ^(2/d_k))."""
    x, pos, theta = c.inputs["in_query_or_key"], c.inputs["token_positions"], c.params["theta"]
    d_k = x.shape[-1]
    out = rotate(x, pos, theta, exponent=-2.0)
    positions = np.broadcast_to(pos, x.shape[:-1]).astype(np.float64)
    angle = positions[..., None] * float(theta) ** (2.0 * np.arange(d_k // 2) / d_k)
    kept = np.repeat(np.abs(angle) <= FLOAT32_ANGLE_LIMIT, 2, axis=-1)
    truth = oracle.rope(x, pos, theta)
    if not (np.abs(out - truth) > CLEAR_MARGIN * (1.0 + np.abs(truth)))[kept].any():
        return None
    return np.ma.masked_array(out, ~kept)


MISTAKES.append(
    Mistake(
        "rope_frequencies_inverted",
        "RoPE's frequencies are Θ^(2k/d_k), the exponent's sign lost; pair k turns at "
        "Θ^(-2k/d_k) = 1 / Θ^(2k/d_k)",
        # RoPE's own output only: in attention every output mixes in the huge angles.
        {"rope": _rope_inverted},
    )
)


def _rotate_at(
    x: np.ndarray,
    positions: np.ndarray,
    frequencies: np.ndarray,
    *,
    pairs: str = "interleaved",
) -> np.ndarray:
    """RoPE with pair k turning at `frequencies[k]`: pairs (x[2k], x[2k+1]), or with
    `pairs="half_interleaved"` the rotate-half pairs (x[i], x[i + d_k/2]) while element i
    turns at frequency i // 2 (cos and sin repeat_interleave'd, the interleaved layout)."""
    x = f64(x)
    d_k = x.shape[-1]
    pos = np.broadcast_to(positions, x.shape[:-1]).astype(np.float64)
    angle = pos[..., None] * frequencies
    if pairs == "half_interleaved":
        angle = np.repeat(angle, 2, axis=-1)
        a, b = x[..., : d_k // 2], x[..., d_k // 2 :]
        return x * np.cos(angle) + np.concatenate([-b, a], -1) * np.sin(angle)
    cos, sin = np.cos(angle), np.sin(angle)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * cos - b * sin, a * sin + b * cos
    return out


def _frequencies(d_k: int, theta: float) -> np.ndarray:
    return float(theta) ** (-2.0 * np.arange(d_k // 2) / d_k)


def _rope_mistake(frequencies, pairs: str = "interleaved", attention: bool = True):
    """Variants of a RoPE whose pair k turns at `frequencies(d_k, theta)[k]`: in RoPE, and
    (`attention`) wherever attention rotates its queries and keys."""

    def rope(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
        return _rotate_at(x, positions, frequencies(np.shape(x)[-1], theta), pairs=pairs)

    families = (MHA_ROPE, BLOCK, *LM) if attention else ()
    return {"rope": _rope_part(rope)} | everywhere(Parts(rope=rope), families)


MISTAKES.append(
    Mistake(
        "rope_angles_in_degrees",
        "RoPE converts its angles from degrees (× π/180, torch.deg2rad); p · Θ^(-2k/d_k) is "
        "already in radians, as cos and sin take it",
        _rope_mistake(lambda d_k, theta: _frequencies(d_k, theta) * math.pi / 180.0),
    )
)


MISTAKES.append(
    Mistake(
        "rope_frequencies_from_one",
        "RoPE counts its pairs from 1, Θ^(-2k/d_k) for k = 1 … d_k/2; pair k turns at "
        "Θ^(-2k/d_k) for k = 0 … d_k/2 - 1 (the first pair at frequency 1)",
        _rope_mistake(lambda d_k, theta: float(theta) ** (-2.0 * (np.arange(d_k // 2) + 1) / d_k)),
    )
)


MISTAKES.append(
    Mistake(
        "rope_frequencies_all_one",
        "every RoPE pair turns at frequency 1: the exponent 2k/d_k computed with integer "
        "division (2 * k // d_k) is 0; it is a fraction, Θ^(-2k/d_k)",
        _rope_mistake(lambda d_k, theta: np.ones(d_k // 2)),
    )
)


MISTAKES.append(
    Mistake(
        "rope_exponent_precedence",
        "RoPE's frequencies are Θ ** -2 * k / d_k, that is Θ^-2 · k / d_k (an operator "
        "precedence slip), so the angles are tiny and the output is nearly x, as with no RoPE "
        "at all; they are Θ ** (-2 * k / d_k)",
        # In attention the angles left are too small to tell from no RoPE at all.
        _rope_mistake(
            lambda d_k, theta: float(theta) ** -2.0 * np.arange(d_k // 2) / d_k, attention=False
        ),
    )
)


MISTAKES.append(
    Mistake(
        "rope_half_pairs_interleaved_frequencies",
        'RoPE pairs x[i] with x[i + d_k/2] ("rotate half") while its cos and sin repeat each '
        "frequency twice (repeat_interleave, the interleaved layout); this assignment pairs "
        "x[2k] with x[2k+1], both at frequency k",
        _rope_mistake(_frequencies, pairs="half_interleaved"),
    )
)


MISTAKES.append(
    Mistake(
        "rope_on_keys_only",
        "RoPE rotates the keys but not the queries; both are rotated",
        {MHA_ROPE: lambda c: mha_with(c, rotated=("k",))},
    )
)


def _scaled_after_softmax(q, k, v, mask) -> np.ndarray:
    d_k = np.shape(q)[-1]
    unscaled = oracle.scaled_dot_product_attention(f64(q) * math.sqrt(d_k), k, v, mask)
    return unscaled / math.sqrt(d_k)


MISTAKES.append(
    Mistake(
        "attention_scaled_after_softmax",
        "the 1/sqrt(d_k) scale is applied after the softmax (to the probabilities, the values "
        "or the output), so the softmax sees unscaled scores; scale the scores before it: "
        "softmax(Q Kᵀ / sqrt(d_k)) V",
        {"scaled_dot_product_attention": _sdpa(_scaled_after_softmax)}
        | everywhere(Parts(attention=_scaled_after_softmax)),
    )
)


def _scaled_by_num_keys(q, k, v, mask) -> np.ndarray:
    q = f64(q) * math.sqrt(np.shape(q)[-1]) / math.sqrt(np.shape(k)[-2])
    return oracle.scaled_dot_product_attention(q, k, v, mask)


def _sequence(c: NumpyCase) -> int:
    """The sequence length of a self-attention family's case (the block's, the LMs')."""
    x = c.inputs.get("in_features")
    return c.inputs["in_indices"].shape[-1] if x is None else x.shape[-2]


def _where(
    shows: Callable[[NumpyCase], bool], variants: Mapping[str, Variant]
) -> dict[str, Variant]:
    """`variants`, None on the cases where `shows(case)` is False."""
    return {
        family: (lambda v: lambda c: v(c) if shows(c) else None)(variant)
        for family, variant in variants.items()
    }


def _num_keys_shows(c: NumpyCase) -> bool:
    """Whether √(number of keys) differs from the right scale (√d_k), from no scale (one key,
    whose weight is 1 at any scale) and from the scales other entries name (d_k, √d_v,
    √d_model)."""
    if c.family == "scaled_dot_product_attention":
        keys, d_k, d_v = c.inputs["K"].shape[-2], c.inputs["Q"].shape[-1], c.inputs["V"].shape[-1]
        return keys not in (1, d_k, d_k**2, d_v)
    d_model = c.params["d_model"]
    d_k = d_model // c.params["num_heads"]
    return _sequence(c) not in (1, d_k, d_k**2, d_model)


MISTAKES.append(
    Mistake(
        "attention_scaled_by_sqrt_num_keys",
        "attention scores are divided by sqrt of the number of keys (K.shape[-2]); they are "
        "divided by sqrt(d_k), the keys' width: K.shape[-1]",
        _where(
            _num_keys_shows,
            {"scaled_dot_product_attention": _sdpa(_scaled_by_num_keys)}
            | everywhere(Parts(attention=_scaled_by_num_keys)),
        ),
    )
)


def _mask_replaced_by_causal(c: NumpyCase) -> np.ndarray | None:
    q, k, mask = c.inputs["Q"], c.inputs["K"], c.inputs.get("mask")
    causal = np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool))
    if mask is not None and np.all(mask == causal):
        return None
    return oracle.scaled_dot_product_attention(q, k, c.inputs["V"], causal)


MISTAKES.append(
    Mistake(
        "attention_mask_replaced_by_causal",
        "attention builds a causal mask of its own and ignores the mask it is given; apply "
        "the mask argument as it is (None: every query attends every key)",
        {"scaled_dot_product_attention": _mask_replaced_by_causal},
    )
)


def _last_query_masked(variants: Mapping[str, Variant]) -> dict[str, Variant]:
    """`variants` with the last position's output left out of the fingerprint: under a mask
    that hides every key from it, an implementation gives it zeros or NaN (0/0), both
    common."""

    def masked(variant: Variant) -> Variant:
        def masked_variant(c: NumpyCase) -> np.ndarray | None:
            out = variant(c)
            if out is None:
                return None
            hidden = np.zeros(np.shape(out), dtype=bool)
            hidden[..., -1, :] = True
            return np.ma.masked_array(out, hidden)

        return masked_variant

    return {family: masked(variant) for family, variant in variants.items()}


_strict_upper = everywhere(Parts(mask=lambda seq: np.triu(np.ones((seq, seq), dtype=bool), 1)))


MISTAKES.append(
    Mistake(
        "attention_causal_mask_strict_upper_triangle",
        "the causal mask is torch.triu(..., diagonal=1), the positions to hide, used as the "
        "positions to keep: query i attends keys i+1 … seq-1 and the last none; the keys to "
        "keep are the lower triangle, tril: keys 0 … i",
        # The last query sees no key: an implementation gives it zeros or NaN, so that row is
        # left out of the fingerprint; not in the LMs, where a NaN row reaches every position
        # of the next layer: there the zeros are named.
        _last_query_masked({f: v for f, v in _strict_upper.items() if f not in LM})
        | {f: v for f, v in _strict_upper.items() if f in LM},
    )
)


MISTAKES.append(
    Mistake(
        "attention_causal_mask_offset_by_one",
        "the causal mask is torch.tril(..., diagonal=1), so query i also attends key i+1, the "
        "next position; query i attends keys 0 … i: tril with diagonal=0",
        # Up to two positions that mask hides nothing: no mask, or (one) the correct output.
        _where(
            lambda c: _sequence(c) > 2,
            everywhere(Parts(mask=lambda seq: np.tril(np.ones((seq, seq), dtype=bool), 1))),
        ),
    )
)


def _keys_from_query_projection(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
    return dict(block) | {"attn.k_proj.weight": block["attn.q_proj.weight"]}


MISTAKES.append(
    Mistake(
        "attention_keys_from_query_projection",
        "the keys are projected with q_proj's weight (a copy-paste: k = x W_qᵀ); k = x W_kᵀ",
        {
            MHA: mha_block_change(_keys_from_query_projection),
            MHA_ROPE: mha_block_change(_keys_from_query_projection),
        }
        | block_change(_keys_from_query_projection),
    )
)
