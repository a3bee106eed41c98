"""The catalog of known mistakes: for each, what an implementation making it outputs.

Each `Mistake` has an id, the one line a failing test opens with when its output matches
(`likely cause: <message>`), and per test family a *variant*: a function of the stored case
(NumPy, float64, built on the oracle) that returns the mistaken implementation's output on
that case's inputs, in the layout the family's test compares.

A variant returns None where the mistake cannot show on the case: Θ is already 10000, there
is no mask, the positions are already `0 … seq−1`, a single head, no value large enough to
overflow. Everywhere else it must differ from the truth by more than the test's tolerance
(the meta-test checks this on every stored case, and the seed sweep on fresh draws), so a
correct output is never diagnosed; only a `graded` mistake, whose effect shrinks with the
data, may stay within the tolerance on a case, where it cannot be seen. Every mistake is
proved by a wrong module in `tests/wrong_adapters/` that declares it in `DIAGNOSED_AS`.

The catalog uses the oracle, so it is withheld from the grader's bundle and the handout like
the oracle itself; under the grader the judge reads its variants from a table the grader
writes beforehand (`diagnose.write_table`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cs336_harness import oracle
from cs336_harness.diagnosis.numpy_cases import NumpyCase
from cs336_harness.oracle.variants import (
    adamw_trajectory_with,
    multihead_self_attention_with,
    non_causal_block,
    transformer_lm_with,
)

Variant = Callable[[NumpyCase], np.ndarray | None]

BLOCK = "transformer_block"
LM = ("transformer_lm", "transformer_lm_truncated_input")
CONFIG_LM = "transformer_lm_from_config"
MHA = "multihead_self_attention"
MHA_ROPE = "multihead_self_attention_with_rope"
LM_SIZES = ("vocab_size", "context_length", "d_model", "num_layers", "num_heads", "d_ff")
# The upstream ablation flags a config may carry (SPEC), which the oracle does not read.
UPSTREAM_FLAGS = ("remove_rmsnorm", "use_post_norm", "remove_rope", "ffn_type")


@dataclass(frozen=True)
class Mistake:
    """`graded`: the mistake's effect shrinks with the data (eps against the mean square,
    tanh against erf far from 0), so on some cases its output is within the tolerance of the
    correct one: it cannot be seen there, and the check that no mistake matches a correct
    output exempts it there."""

    id: str
    message: str
    variants: Mapping[str, Variant]
    graded: bool = False

    @property
    def line(self) -> str:
        return f"likely cause: {self.message}"


# -- reading a case ------------------------------------------------------------------------


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _positions(case: NumpyCase, x: np.ndarray) -> np.ndarray | None:
    """The case's token positions; None where they are 0 … seq−1 (given or omitted)."""
    pos = case.inputs.get("token_positions")
    if pos is None:
        return None
    pos = np.broadcast_to(pos, x.shape[:-1])
    return None if np.array_equal(pos, np.broadcast_to(np.arange(x.shape[-2]), pos.shape)) else pos


def _mha_weights(case: NumpyCase) -> list[np.ndarray]:
    return [case.weights[f"{p}.weight"] for p in ("q_proj", "k_proj", "v_proj", "output_proj")]


def _mha(case: NumpyCase, weights: list[np.ndarray], **options: Any) -> np.ndarray:
    """The oracle's multi-head attention on the case's input, with RoPE where the family has it."""
    return oracle.multihead_self_attention(
        case.inputs["in_features"], *weights, case.params["num_heads"], **_rope_args(case) | options
    )


def _rope_args(case: NumpyCase) -> dict[str, Any]:
    if case.family != MHA_ROPE:
        return {}
    return {"theta": case.params["theta"], "positions": case.inputs.get("token_positions")}


def _block(case: NumpyCase, weights: Mapping[str, np.ndarray], **config: Any) -> np.ndarray:
    p = case.params
    return oracle.transformer_block(
        case.inputs["in_features"],
        weights,
        num_heads=p["num_heads"],
        config={"rope_theta": p["theta"]} | config,
    )


def _lm_config(case: NumpyCase) -> dict[str, Any]:
    return {k: case.params[k] for k in (*LM_SIZES, "rope_theta")}


def _lm(case: NumpyCase, weights: Mapping[str, np.ndarray], **config: Any) -> np.ndarray:
    return oracle.transformer_lm(case.inputs["in_indices"], weights, _lm_config(case) | config)


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


def _config_lm(case: NumpyCase, config: Mapping[str, Any], **switches: Any) -> np.ndarray:
    if switches:
        return transformer_lm_with(case.inputs["in_indices"], case.weights, config, **switches)
    return oracle.transformer_lm(case.inputs["in_indices"], case.weights, config)


def _block_change(
    change: Callable[[Mapping[str, np.ndarray], int], dict[str, np.ndarray] | None],
    final: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] = dict,
) -> dict[str, Variant]:
    """Variants for the block and both LM families from one change to a block's weights
    (`change(weights, num_heads)`, None where it cannot show), made in every layer of the LM;
    `final` then changes the LM's whole weight dict (`ln_final`, the head)."""

    def block(c: NumpyCase) -> np.ndarray | None:
        weights = change(c.weights, c.params["num_heads"])
        return None if weights is None else _block(c, weights)

    def lm(c: NumpyCase) -> np.ndarray | None:
        weights = dict(c.weights)
        for i in range(c.params["num_layers"]):
            prefix = f"layers.{i}."
            layer = {k.removeprefix(prefix): v for k, v in weights.items() if k.startswith(prefix)}
            changed = change(layer, c.params["num_heads"])
            if changed is None:
                return None
            weights |= {prefix + k: v for k, v in changed.items()}
        return _lm(c, final(weights))

    return {BLOCK: block} | dict.fromkeys(LM, lm)


# -- numerics of mistaken arithmetic -----------------------------------------------------


def round_to_bfloat16(x: np.ndarray) -> np.ndarray:
    """Round to the nearest bfloat16 (ties to even), as float64: via float32, as torch does."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def _round_to_float16(a: np.ndarray) -> np.ndarray:
    """Round float64 values as a torch float16 operation does: via float32."""
    return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float64)


FLOAT32_MAX = float(np.finfo(np.float32).max)
# exp(x) rounds to 0 in float32 below the smallest subnormal's half: x < ln(2⁻¹⁵⁰).
FLOAT32_EXP_UNDERFLOW = math.log(2.0**-150)


def _float32_exp(x: np.ndarray) -> np.ndarray:
    """exp in float64, then overflowing and underflowing where float32's would."""
    with np.errstate(over="ignore"):
        e = np.exp(x)
    return np.where(e > FLOAT32_MAX, np.inf, np.where(x < FLOAT32_EXP_UNDERFLOW, 0.0, e))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


# -- the variants, family by family ----------------------------------------------------


def _linear_not_transposed(c: NumpyCase) -> np.ndarray | None:
    w = c.weights["weight"]
    return None if w.shape[0] != w.shape[1] else _f64(c.inputs["in_features"]) @ _f64(w)


def _embedding_bf16(c: NumpyCase) -> np.ndarray | None:
    table = round_to_bfloat16(c.weights["weight"])
    return None if np.array_equal(table, c.weights["weight"]) else table[c.inputs["token_ids"]]


def _rmsnorm_eps_outside(c: NumpyCase) -> np.ndarray:
    x = _f64(c.inputs["in_features"])
    rms = np.sqrt(np.mean(x**2, axis=-1, keepdims=True))
    return x / (rms + c.params["eps"]) * _f64(c.weights["weight"])


def _rmsnorm_no_gain(c: NumpyCase) -> np.ndarray | None:
    gain = c.weights["weight"]
    return (
        None if np.all(gain == 1) else oracle.rmsnorm(c.inputs["in_features"], 1.0, c.params["eps"])
    )


def _rmsnorm_half(c: NumpyCase) -> np.ndarray | None:
    """x · rsqrt(mean(x²) + eps) · g in float16, every operation rounded to float16 (the mean
    accumulated in float32, as torch does on the CPU): squares past 256 overflow. Not for
    bfloat16, whose rsqrt torch computes up to an ulp off: its mistaken output cannot be
    reproduced to the one-ulp tolerance."""
    if c.params.get("dtype") != "float16":
        return None
    r = _round_to_float16
    x = _f64(c.inputs["in_features"])
    with np.errstate(over="ignore"):
        squares = r(x * x)
        mean_square = r(np.sum(squares.astype(np.float32), axis=-1, keepdims=True) / x.shape[-1])
        inv = r(1.0 / np.sqrt(r(mean_square + c.params["eps"])))
    return r(r(x * inv) * r(c.weights["weight"]))


def _layernorm_unbiased(c: NumpyCase) -> np.ndarray:
    x = _f64(c.inputs["in_features"])
    d = x.shape[-1]
    centred = x - x.mean(-1, keepdims=True)
    var = (centred**2).sum(-1, keepdims=True) / (d - 1)
    return centred / np.sqrt(var + c.params["eps"]) * _f64(c.weights["weight"]) + c.weights["bias"]


def _config_layernorm_unbiased(c: NumpyCase) -> np.ndarray | None:
    """LayerNorm with the variance over d − 1 is LayerNorm with the gain times √((d−1)/d) and
    eps times (d−1)/d: the same model with changed parameters."""
    cfg = oracle_config(c.params["config"])
    if cfg.get("norm") != "layernorm":
        return None
    shrink = (cfg["d_model"] - 1) / cfg["d_model"]
    scaled = {k: _f64(c.weights[k]) * math.sqrt(shrink) for k in _gain_names(c.weights)}
    weights = dict(c.weights) | scaled
    eps = cfg.get("norm_eps", 1e-5) * shrink
    return oracle.transformer_lm(c.inputs["in_indices"], weights, cfg | {"norm_eps": eps})


def _gelu_tanh(c: NumpyCase) -> np.ndarray | None:
    if c.params["approximate"] != "none":
        return None
    return oracle.gelu(c.inputs["in_features"], approximate="tanh")


def _ffn_gelu_tanh(c: NumpyCase) -> np.ndarray:
    w = c.weights
    return oracle.feedforward(
        c.inputs["in_features"], w["w1.weight"], w["w2.weight"], approximate="tanh"
    )


def _config_gelu_tanh(c: NumpyCase) -> np.ndarray | None:
    cfg = oracle_config(c.params["config"])
    if cfg.get("ffn") != "gelu" or cfg.get("gelu_approximate", "none") != "none":
        return None
    return _config_lm(c, cfg | {"gelu_approximate": "tanh"})


def _softmax_dim(c: NumpyCase) -> int:
    return c.params["dim"] % c.inputs["in_features"].ndim


def _softmax_last_dim(c: NumpyCase) -> np.ndarray | None:
    x = c.inputs["in_features"]
    return None if _softmax_dim(c) == x.ndim - 1 else oracle.softmax(x, -1)


def _softmax_no_shift(c: NumpyCase) -> np.ndarray | None:
    x, dim = _f64(c.inputs["in_features"]), _softmax_dim(c)
    e = _float32_exp(x)
    total = e.sum(axis=dim, keepdims=True)
    if np.isfinite(e).all() and (total > 0).all():
        return None  # nothing overflows: the same function, up to rounding
    with np.errstate(invalid="ignore", divide="ignore"):
        return e / total


def _silu_sigmoid(c: NumpyCase) -> np.ndarray:
    return _sigmoid(_f64(c.inputs["in_features"]))


def _swiglu_sigmoid_gate(c: NumpyCase) -> np.ndarray:
    x, w = c.inputs["in_features"], c.weights
    gate = _sigmoid(oracle.linear(x, w["w1.weight"]))
    return oracle.linear(gate * oracle.linear(x, w["w3.weight"]), w["w2.weight"])


def _swiglu_swapped(c: NumpyCase) -> np.ndarray:
    w = c.weights
    return oracle.swiglu(c.inputs["in_features"], w["w3.weight"], w["w2.weight"], w["w1.weight"])


def _rope(c: NumpyCase, positions=None, theta=None, pairing="interleaved") -> np.ndarray:
    x = c.inputs["in_query_or_key"]
    pos = c.inputs["token_positions"] if positions is None else positions
    return oracle.rope(x, pos, c.params["theta"] if theta is None else theta, pairing)


def _rope_positions_ignored(c: NumpyCase) -> np.ndarray | None:
    x = c.inputs["in_query_or_key"]
    return None if _positions(c, x) is None else _rope(c, positions=np.arange(x.shape[-2]))


def _mha_rope_positions_ignored(c: NumpyCase) -> np.ndarray | None:
    """Attention with RoPE sees only the offsets between positions: positions p₀ + 0 … seq−1
    give the same output as 0 … seq−1."""
    pos = _positions(c, c.inputs["in_features"])
    if pos is None or np.array_equal(
        pos - pos[..., :1], np.broadcast_to(np.arange(pos.shape[-1]), pos.shape)
    ):
        return None
    return _mha(c, _mha_weights(c), positions=None)


FIXED_THETA = 10000.0


def _theta(c: NumpyCase) -> float:
    return c.params["rope_theta" if c.family in LM else "theta"]


def _theta_fixed(variant: Callable[[NumpyCase], np.ndarray]) -> Variant:
    return lambda c: None if _theta(c) == FIXED_THETA else variant(c)


def _scaled_q(c: NumpyCase, d_k: int) -> np.ndarray:
    return _f64(c.inputs["Q"]) * math.sqrt(d_k)


def _attention_unscaled(c: NumpyCase) -> np.ndarray:
    q = c.inputs["Q"]
    return oracle.scaled_dot_product_attention(
        _scaled_q(c, q.shape[-1]), c.inputs["K"], c.inputs["V"], c.inputs.get("mask")
    )


def _attention_d_v(c: NumpyCase) -> np.ndarray | None:
    d_k, d_v = c.inputs["Q"].shape[-1], c.inputs["V"].shape[-1]
    if d_k == d_v:
        return None
    q = _scaled_q(c, d_k) / math.sqrt(d_v)
    return oracle.scaled_dot_product_attention(
        q, c.inputs["K"], c.inputs["V"], c.inputs.get("mask")
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


def _attention_mask_inverted(c: NumpyCase) -> np.ndarray | None:
    mask = c.inputs.get("mask")
    if mask is None:
        return None
    return oracle.scaled_dot_product_attention(c.inputs["Q"], c.inputs["K"], c.inputs["V"], ~mask)


def _unscaled(block: Mapping[str, np.ndarray], num_heads: int) -> dict[str, np.ndarray]:
    """A block whose scores come out unscaled from the oracle, which divides them by √d_k:
    its query projection times √d_k (RoPE is linear, so it commutes with the factor)."""
    q = block["attn.q_proj.weight"]
    return dict(block) | {"attn.q_proj.weight": _f64(q) * math.sqrt(q.shape[0] // num_heads)}


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


def _swapped_w1_w3(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
    w1, w3 = block["ffn.w1.weight"], block["ffn.w3.weight"]
    return dict(block) | {"ffn.w1.weight": w3, "ffn.w3.weight": w1}


def _shared_gain(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
    return dict(block) | {"ln2.weight": block["ln1.weight"]}


def _gain_names(weights: Mapping[str, np.ndarray]) -> list[str]:
    """The norms' gains: `ln1.weight`, `layers.0.ln2.weight`, `ln_final.weight`, ..."""
    return [k for k in weights if k.endswith(".weight") and k.split(".")[-2].startswith("ln")]


def _unit_gains(weights: Mapping[str, np.ndarray], _: int = 0) -> dict[str, np.ndarray]:
    return dict(weights) | {k: np.ones_like(weights[k]) for k in _gain_names(weights)}


def _mha_block_change(change: Callable[..., dict[str, np.ndarray] | None]) -> Variant:
    """The attention-family variant of a block change (the block's `attn.` weights)."""
    names = ("q_proj", "k_proj", "v_proj", "output_proj")

    def variant(c: NumpyCase) -> np.ndarray | None:
        block = change(
            {f"attn.{n}.weight": c.weights[f"{n}.weight"] for n in names}, c.params["num_heads"]
        )
        return None if block is None else _mha(c, [block[f"attn.{n}.weight"] for n in names])

    return variant


def _mha_with(c: NumpyCase, **switches: Any) -> np.ndarray:
    return multihead_self_attention_with(
        c.inputs["in_features"], *_mha_weights(c), c.params["num_heads"], **_rope_args(c) | switches
    )


def _lm_pads(c: NumpyCase) -> np.ndarray | None:
    ids, context = c.inputs["in_indices"], c.params["context_length"]
    seq = ids.shape[-1]
    if seq == context:
        return None
    padded = np.concatenate([np.zeros((*ids.shape[:-1], context - seq), ids.dtype), ids], -1)
    return oracle.transformer_lm(padded, c.weights, _lm_config(c))[..., -seq:, :]


def _config_rope_pairing_ignored(c: NumpyCase) -> np.ndarray | None:
    cfg = oracle_config(c.params["config"])
    if cfg.get("rope_pairing") != "half" or cfg.get("positions", "rope") != "rope":
        return None
    return _config_lm(c, cfg | {"rope_pairing": "interleaved"})


def _config_positions_after_first_block(c: NumpyCase) -> np.ndarray | None:
    cfg = oracle_config(c.params["config"])
    if cfg.get("positions") != "learned":
        return None
    return _config_lm(c, cfg, positions_after_first_block=True)


def _ce_terms(c: NumpyCase) -> tuple[np.ndarray, np.ndarray]:
    z = _f64(c.inputs["inputs"])
    target = np.take_along_axis(z, c.inputs["targets"][..., None].astype(np.int64), -1)[..., 0]
    return z, target


def _ce_no_shift(c: NumpyCase) -> np.ndarray | None:
    z, target = _ce_terms(c)
    e = _float32_exp(z)
    if np.isfinite(e).all() and (e.sum(-1) > 0).all():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.mean(np.log(e.sum(-1)) - target))


def _ce_summed(c: NumpyCase) -> np.ndarray | None:
    targets = c.inputs["targets"]
    if targets.size == 1:
        return None
    return np.asarray(oracle.cross_entropy(c.inputs["inputs"], targets) * targets.size)


def _clipping_grads(c: NumpyCase) -> list[np.ndarray]:
    return [
        _f64(c.inputs[f"grad.{i}"]) for i in range(c.params["count"]) if f"grad.{i}" in c.inputs
    ]


def _clipped(c: NumpyCase) -> tuple[list[np.ndarray], float, float] | None:
    grads = _clipping_grads(c)
    total = math.sqrt(sum(float((g**2).sum()) for g in grads))
    limit = c.params["max_l2_norm"]
    return None if total <= limit else (grads, total, limit)


def _clipping_per_parameter(c: NumpyCase) -> np.ndarray | None:
    clipped = _clipped(c)
    if clipped is None:
        return None
    grads, _, limit = clipped
    out = []
    for g in grads:
        norm = float(np.sqrt((g**2).sum()))
        out.append(g * (limit / (norm + 1e-6)) if norm > limit else g)
    return np.concatenate([g.ravel() for g in out])


def _clipping_without_eps(c: NumpyCase) -> np.ndarray | None:
    clipped = _clipped(c)
    if clipped is None:
        return None
    grads, total, limit = clipped
    return np.concatenate([(g * (limit / total)).ravel() for g in grads])


def _adamw(**switches: Any) -> Variant:
    def variant(c: NumpyCase) -> np.ndarray | None:
        p = c.params
        if "per_group" in switches and len({repr(_hyper(g)) for g in p["groups"]}) == 1:
            return None
        initial = [c.inputs[f"initial.{i}"] for i in range(p["count"])]
        grads = [
            [c.inputs.get(f"grad.{t}.{i}") for i in range(p["count"])] for t in range(p["steps"])
        ]
        steps = adamw_trajectory_with(initial, grads, p["groups"], **switches)
        return np.stack([np.concatenate([q.ravel() for q in step]) for step in steps])

    return variant


def _hyper(group: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in group.items() if k != "params"}


def _schedule(rate: Callable[[int, float, float, int, int], float], applies) -> Variant:
    def variant(c: NumpyCase) -> np.ndarray | None:
        p, its = c.params, c.inputs["its"].tolist()
        args = (
            p["max_learning_rate"],
            p["min_learning_rate"],
            p["warmup_iters"],
            p["cosine_cycle_iters"],
        )
        if not applies(its, *args):
            return None
        return np.asarray([rate(it, *args) for it in its])

    return variant


def _cosine(phase: float, max_lr: float, min_lr: float) -> float:
    return min_lr + 0.5 * (1 + math.cos(math.pi * phase)) * (max_lr - min_lr)


def _warmup_off_by_one(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return (it + 1) / warmup * max_lr
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


def _cosine_over_whole_cycle(it, max_lr, min_lr, warmup, cycle):
    if warmup <= it <= cycle:
        return _cosine(it / cycle, max_lr, min_lr)
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


def _no_floor(it, max_lr, min_lr, warmup, cycle):
    if it > cycle:
        return _cosine((it - warmup) / (cycle - warmup), max_lr, min_lr)
    return oracle.cosine_schedule(it, max_lr, min_lr, warmup, cycle)


def _not_causal_block(c: NumpyCase) -> np.ndarray:
    p = c.params
    return non_causal_block(
        c.inputs["in_features"], c.weights, num_heads=p["num_heads"], theta=p["theta"]
    )


def _lm_with(**switches: Any) -> Variant:
    return lambda c: transformer_lm_with(
        c.inputs["in_indices"], c.weights, _lm_config(c), **switches
    )


MISTAKES: tuple[Mistake, ...] = (
    Mistake(
        "linear_weight_not_transposed",
        "Linear computes x @ W; W is stored (d_out, d_in), so y = x @ W.T",
        {"linear": _linear_not_transposed},
    ),
    Mistake(
        "embedding_table_in_bfloat16",
        "the embedding table is kept in bfloat16, so rows come back rounded; a lookup returns "
        "the stored rows exactly",
        {"embedding": _embedding_bf16},
    ),
    Mistake(
        "rmsnorm_eps_outside_sqrt",
        "RMSNorm divides by sqrt(mean(x²)) + eps; eps goes inside: x / sqrt(mean(x²) + eps)",
        {"rmsnorm": _rmsnorm_eps_outside},
        graded=True,
    ),
    Mistake(
        "rmsnorm_without_gain",
        "RMSNorm leaves out its gain: x / RMS(x) is multiplied elementwise by the learned weight",
        {"rmsnorm": _rmsnorm_no_gain} | _block_change(_unit_gains, final=_unit_gains),
    ),
    Mistake(
        "rmsnorm_in_half_precision",
        "RMSNorm computes in the input's half precision; upcast to float32 first (float16 "
        "squares overflow, bfloat16 sums round), then cast the result back",
        {"rmsnorm": _rmsnorm_half},
    ),
    Mistake(
        "layernorm_unbiased_variance",
        "LayerNorm divides the variance by d_model - 1 (torch.var's default); LayerNorm's "
        "variance is biased: divide by d_model (unbiased=False / correction=0)",
        {"layernorm": _layernorm_unbiased, CONFIG_LM: _config_layernorm_unbiased},
    ),
    Mistake(
        "silu_is_sigmoid",
        "SiLU returns sigmoid(x); SiLU is x * sigmoid(x)",
        {"silu": _silu_sigmoid, "swiglu": _swiglu_sigmoid_gate},
    ),
    Mistake(
        "gelu_tanh_for_exact",
        "GELU uses the tanh approximation where the exact GELU, 0.5 x (1 + erf(x / sqrt 2)), "
        "is asked for",
        {
            "gelu": _gelu_tanh,
            "positionwise_feedforward": _ffn_gelu_tanh,
            CONFIG_LM: _config_gelu_tanh,
        },
        graded=True,
    ),
    Mistake(
        "softmax_over_last_dim",
        "softmax normalises over the last dimension whatever `dim` is",
        {"softmax": _softmax_last_dim},
    ),
    Mistake(
        "softmax_without_max_shift",
        "softmax exponentiates without subtracting the maximum first: exp overflows to inf "
        "and inf / inf is NaN; softmax(x) = softmax(x - max(x))",
        {"softmax": _softmax_no_shift},
    ),
    Mistake(
        "swiglu_w1_w3_swapped",
        "SwiGLU gates the wrong branch: the SiLU goes on W1 x, W2(silu(W1 x) * W3 x)",
        {"swiglu": _swiglu_swapped} | _block_change(_swapped_w1_w3),
    ),
    Mistake(
        "rope_rotate_half",
        'RoPE pairs x[k] with x[k + d_k/2] ("rotate half"); this assignment pairs x[2k] with '
        "x[2k+1]",
        {
            "rope": lambda c: _rope(c, pairing="half"),
            MHA_ROPE: lambda c: _mha(c, _mha_weights(c), pairing="half"),
            BLOCK: lambda c: _block(c, c.weights, rope_pairing="half"),
        }
        | dict.fromkeys(LM, lambda c: _lm(c, c.weights, rope_pairing="half")),
    ),
    Mistake(
        "rope_ignores_positions",
        "RoPE ignores token_positions and rotates by 0 … seq-1",
        {"rope": _rope_positions_ignored, MHA_ROPE: _mha_rope_positions_ignored},
    ),
    Mistake(
        "rope_theta_fixed",
        "RoPE uses Θ = 10000 whatever theta is given",
        {
            "rope": _theta_fixed(lambda c: _rope(c, theta=FIXED_THETA)),
            MHA_ROPE: _theta_fixed(lambda c: _mha(c, _mha_weights(c), theta=FIXED_THETA)),
            BLOCK: _theta_fixed(lambda c: _block(c, c.weights, rope_theta=FIXED_THETA)),
        }
        | dict.fromkeys(LM, _theta_fixed(lambda c: _lm(c, c.weights, rope_theta=FIXED_THETA))),
    ),
    Mistake(
        "attention_unscaled",
        "attention scores are not divided by sqrt(d_k)",
        {
            "scaled_dot_product_attention": _attention_unscaled,
            MHA: _mha_block_change(_unscaled),
            MHA_ROPE: _mha_block_change(_unscaled),
        }
        | _block_change(_unscaled),
    ),
    Mistake(
        "attention_scaled_by_d_v",
        "attention scores are divided by sqrt(d_v); the scale is 1 / sqrt(d_k), the queries' "
        "and keys' width",
        {"scaled_dot_product_attention": _attention_d_v},
    ),
    Mistake(
        "attention_nan_on_fully_masked_row",
        "a query whose keys are all masked gets NaN (a softmax over -inf only); its output is "
        "zeros here",
        {"scaled_dot_product_attention": _attention_nan_rows},
    ),
    Mistake(
        "attention_mask_inverted",
        "the mask is applied inverted: True means the query may attend to that key",
        {"scaled_dot_product_attention": _attention_mask_inverted},
    ),
    Mistake(
        "attention_not_causal",
        "self-attention has no causal mask: query i may attend only to keys 0 … i",
        {
            MHA: lambda c: _mha_with(c, causal=False),
            MHA_ROPE: lambda c: _mha_with(c, causal=False),
            BLOCK: _not_causal_block,
        }
        | dict.fromkeys(LM, _lm_with(causal=False)),
    ),
    Mistake(
        "attention_heads_strided",
        "heads are split as strided features (head h = features h, h+H, h+2H, …); head h is "
        "the contiguous block h·d_k … (h+1)·d_k - 1 of each projection",
        {MHA: _mha_block_change(_strided), MHA_ROPE: _mha_block_change(_strided)}
        | _block_change(_strided),
    ),
    Mistake(
        "rope_on_values",
        "RoPE is applied to the values as well; it rotates only the queries and the keys",
        {MHA_ROPE: lambda c: _mha_with(c, rotated=("q", "k", "v"))},
    ),
    Mistake(
        "rope_on_queries_only",
        "RoPE rotates the queries but not the keys; both are rotated",
        {MHA_ROPE: lambda c: _mha_with(c, rotated=("q",))},
    ),
    Mistake(
        "block_post_norm",
        "the block is post-norm, h = ln1(x + attn(x)); the block is pre-norm, "
        "h = x + attn(ln1(x)), out = h + ffn(ln2(h))",
        {BLOCK: lambda c: _block(c, c.weights, norm_position="post")},
    ),
    Mistake(
        "block_norms_share_a_gain",
        "both norms of the block use ln1's gain; ln2 has its own weight",
        _block_change(_shared_gain),
    ),
    Mistake(
        "lm_without_final_norm",
        "the language model skips ln_final before the output head",
        dict.fromkeys(LM, _lm_with(final_norm=False)),
    ),
    Mistake(
        "lm_head_tied_to_embeddings",
        "the output head reads token_embeddings (tied), but the weights give lm_head its own "
        "matrix",
        dict.fromkeys(
            LM,
            lambda c: _lm(c, c.weights | {"lm_head.weight": c.weights["token_embeddings.weight"]}),
        ),
    ),
    Mistake(
        "lm_pads_short_inputs",
        "a short input is left-padded to context_length, and the padding leaks into attention; "
        "run a shorter sequence as it is",
        {"transformer_lm_truncated_input": _lm_pads},
    ),
    Mistake(
        "config_rope_pairing_ignored",
        'the config\'s rope_pairing "half" is ignored: RoPE pairs interleaved dimensions anyway',
        {CONFIG_LM: _config_rope_pairing_ignored},
    ),
    Mistake(
        "learned_positions_after_first_block",
        "learned position embeddings are added to the first block's output; they are added to "
        "the token embeddings",
        {CONFIG_LM: _config_positions_after_first_block},
    ),
    Mistake(
        "cross_entropy_without_max_shift",
        "cross-entropy takes log(sum(exp(logits))) without subtracting the maximum first, and "
        "exp overflows",
        {"cross_entropy": _ce_no_shift},
    ),
    Mistake(
        "cross_entropy_summed",
        "cross-entropy is summed over the positions; it is their mean",
        {"cross_entropy": _ce_summed},
    ),
    Mistake(
        "clipping_per_parameter",
        "each gradient is clipped by its own norm; the norm is one L2 norm over all gradients "
        "together",
        {"gradient_clipping": _clipping_per_parameter},
    ),
    Mistake(
        "clipping_without_epsilon",
        "gradients are scaled by max / norm; the factor is max / (norm + 1e-6)",
        {"gradient_clipping": _clipping_without_eps},
        graded=True,
    ),
    Mistake(
        "adamw_without_bias_correction",
        "AdamW steps by lr · m / (sqrt(v) + eps) without the bias correction "
        "sqrt(1 - β2^t) / (1 - β1^t)",
        {"adamw": _adamw(bias_correction=False)},
    ),
    Mistake(
        "adamw_coupled_weight_decay",
        "weight decay is added to the gradient (Adam with L2); AdamW decays the parameters "
        "directly: θ ← θ - lr·λ·θ",
        {"adamw": _adamw(decay="coupled")},
    ),
    Mistake(
        "adamw_decay_without_lr",
        "weight decay is θ ← θ - λ·θ; it is scaled by the learning rate: θ ← θ - lr·λ·θ",
        {"adamw": _adamw(decay="without_lr")},
    ),
    Mistake(
        "adamw_ignores_param_groups",
        "every parameter group is stepped with the constructor's hyperparameters; each group "
        "has its own lr, betas, eps and weight_decay",
        {"adamw": _adamw(per_group=False)},
    ),
    Mistake(
        "schedule_warmup_off_by_one",
        "warm-up is (it + 1) / warmup_iters · max; it is it / warmup_iters · max, 0 at it = 0",
        {"learning_rate_schedule": _schedule(_warmup_off_by_one, lambda its, *a: min(its) < a[2])},
    ),
    Mistake(
        "schedule_cosine_over_whole_cycle",
        "the cosine's phase is it / cosine_cycle_iters; it is "
        "(it - warmup_iters) / (cosine_cycle_iters - warmup_iters)",
        {"learning_rate_schedule": _schedule(_cosine_over_whole_cycle, lambda its, *a: a[2] > 0)},
    ),
    Mistake(
        "schedule_without_floor",
        "past cosine_cycle_iters the rate follows the cosine back up; it stays at "
        "min_learning_rate",
        {"learning_rate_schedule": _schedule(_no_floor, lambda its, *a: max(its) > a[3])},
    ),
)

BY_ID: dict[str, Mistake] = {m.id: m for m in MISTAKES}
if len(BY_ID) != len(MISTAKES):
    raise ValueError("duplicate mistake ids in the catalog")


def variants(case: NumpyCase) -> dict[str, np.ndarray]:
    """Every catalogued mistake's output on `case` (ids of the mistakes that can show there)."""
    out = {}
    for mistake in MISTAKES:
        variant = mistake.variants.get(case.family)
        if variant is not None and (value := variant(case)) is not None:
            out[mistake.id] = np.asarray(value, dtype=np.float64)
    return out
