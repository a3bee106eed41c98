"""Known mistakes in the components: Linear, Embedding, the norms, the activations, softmax,
SwiGLU and the position-wise feed-forward (and where each shows in the models built from them)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from cs336_harness.families import BY_NAME
from cs336_harness.judging.diagnosis.numpy_cases import NumpyCase
from cs336_staff import oracle
from cs336_staff.catalog.mistake import Mistake, Variant
from cs336_staff.catalog.numerics import (
    FLOAT32_EXP_SUBNORMAL,
    FLOAT32_EXP_UNDERFLOW,
    float32_exp,
    round_to_bfloat16,
    round_to_float16,
    sigmoid,
)
from cs336_staff.catalog.parts import Parts, everywhere
from cs336_staff.catalog.reading import (
    BLOCK,
    CONFIG_LM,
    LM,
    MHA,
    MHA_ROPE,
    block_change,
    f64,
    gain_names,
    mha_block_change,
    oracle_config,
    run_config_lm,
    unit_gains,
)

MISTAKES: list[Mistake] = []


def _linear_not_transposed(c: NumpyCase) -> np.ndarray | None:
    w = c.weights["weight"]
    return None if w.shape[0] != w.shape[1] else f64(c.inputs["in_features"]) @ f64(w)


MISTAKES.append(
    Mistake(
        "linear_weight_not_transposed",
        "Linear computes x @ W; W is stored (d_out, d_in), so y = x @ W.T",
        # Attention's projections are square, so there the mistake is a value (the output of
        # attention_projections_not_transposed, which names it where Linear is not wrong);
        # the feed-forward's are not, and raise.
        {"linear": _linear_not_transposed}
        | everywhere(Parts(linear=lambda x, w: f64(x) @ f64(w)), (MHA, MHA_ROPE)),
    )
)


def _embedding_bf16(c: NumpyCase) -> np.ndarray | None:
    table = round_to_bfloat16(c.weights["weight"])
    return None if np.array_equal(table, c.weights["weight"]) else table[c.inputs["token_ids"]]


MISTAKES.append(
    Mistake(
        "embedding_table_in_bfloat16",
        "the embedding table is kept in bfloat16, so rows come back rounded; a lookup returns "
        "the stored rows exactly",
        {"embedding": _embedding_bf16},
    )
)


def _rmsnorm_eps_outside(c: NumpyCase) -> np.ndarray:
    x = f64(c.inputs["in_features"])
    rms = np.sqrt(np.mean(x**2, axis=-1, keepdims=True))
    return x / (rms + c.params["eps"]) * f64(c.weights["weight"])


MISTAKES.append(
    Mistake(
        "rmsnorm_eps_outside_sqrt",
        "RMSNorm divides by sqrt(mean(x²)) + eps; eps goes inside: x / sqrt(mean(x²) + eps)",
        {"rmsnorm": _rmsnorm_eps_outside},
        graded=True,
    )
)


def _rmsnorm_no_gain(c: NumpyCase) -> np.ndarray | None:
    gain = c.weights["weight"]
    return (
        None if np.all(gain == 1) else oracle.rmsnorm(c.inputs["in_features"], 1.0, c.params["eps"])
    )


MISTAKES.append(
    Mistake(
        "rmsnorm_without_gain",
        "RMSNorm leaves out its gain: x / RMS(x) is multiplied elementwise by the learned weight",
        {"rmsnorm": _rmsnorm_no_gain} | block_change(unit_gains, final=unit_gains),
    )
)


def _rmsnorm_half(c: NumpyCase) -> np.ndarray | None:
    """x · rsqrt(mean(x²) + eps) · g in float16, every operation rounded to float16 (the mean
    accumulated in float32, as torch does on the CPU): squares past 256 overflow. Not for
    bfloat16, whose rsqrt torch computes up to an ulp off: its mistaken output cannot be
    reproduced to the one-ulp tolerance."""
    if c.params.get("dtype") != "float16":
        return None
    r = round_to_float16
    x = f64(c.inputs["in_features"])
    with np.errstate(over="ignore"):
        squares = r(x * x)
        mean_square = r(np.sum(squares.astype(np.float32), axis=-1, keepdims=True) / x.shape[-1])
        inv = r(1.0 / np.sqrt(r(mean_square + c.params["eps"])))
    return r(r(x * inv) * r(c.weights["weight"]))


MISTAKES.append(
    Mistake(
        "rmsnorm_in_half_precision",
        "RMSNorm computes in the input's half precision; upcast to float32 first (float16 "
        "squares overflow, bfloat16 sums round), then cast the result back",
        {"rmsnorm": _rmsnorm_half},
    )
)


def _layernorm_unbiased(c: NumpyCase) -> np.ndarray:
    x = f64(c.inputs["in_features"])
    d = x.shape[-1]
    centred = x - x.mean(-1, keepdims=True)
    var = (centred**2).sum(-1, keepdims=True) / (d - 1)
    return centred / np.sqrt(var + c.params["eps"]) * f64(c.weights["weight"]) + c.weights["bias"]


def _config_layernorm_unbiased(c: NumpyCase) -> np.ndarray | None:
    """LayerNorm with the variance over d − 1 is LayerNorm with the gain times √((d−1)/d) and
    eps times (d−1)/d: the same model with changed parameters."""
    cfg = oracle_config(c.params["config"])
    if cfg.get("norm") != "layernorm":
        return None
    shrink = (cfg["d_model"] - 1) / cfg["d_model"]
    scaled = {k: f64(c.weights[k]) * math.sqrt(shrink) for k in gain_names(c.weights)}
    weights = dict(c.weights) | scaled
    eps = cfg.get("norm_eps", 1e-5) * shrink
    return oracle.transformer_lm(c.inputs["in_indices"], weights, cfg | {"norm_eps": eps})


MISTAKES.append(
    Mistake(
        "layernorm_unbiased_variance",
        "LayerNorm divides the variance by d_model - 1 (torch.var's default); LayerNorm's "
        "variance is biased: divide by d_model (unbiased=False / correction=0)",
        {"layernorm": _layernorm_unbiased, CONFIG_LM: _config_layernorm_unbiased},
    )
)


def _silu_sigmoid(c: NumpyCase) -> np.ndarray:
    return sigmoid(f64(c.inputs["in_features"]))


def _swiglu_sigmoid_gate(c: NumpyCase) -> np.ndarray:
    x, w = c.inputs["in_features"], c.weights
    gate = sigmoid(oracle.linear(x, w["w1.weight"]))
    return oracle.linear(gate * oracle.linear(x, w["w3.weight"]), w["w2.weight"])


MISTAKES.append(
    Mistake(
        "silu_is_sigmoid",
        "SiLU returns sigmoid(x); SiLU is x * sigmoid(x)",
        {"silu": _silu_sigmoid, "swiglu": _swiglu_sigmoid_gate},
    )
)


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
    return run_config_lm(c, cfg | {"gelu_approximate": "tanh"})


MISTAKES.append(
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
    )
)


def _softmax_dim(c: NumpyCase) -> int:
    return c.params["dim"] % c.inputs["in_features"].ndim


def _softmax_last_dim(c: NumpyCase) -> np.ndarray | None:
    x = c.inputs["in_features"]
    return None if _softmax_dim(c) == x.ndim - 1 else oracle.softmax(x, -1)


MISTAKES.append(
    Mistake(
        "softmax_over_last_dim",
        "softmax normalises over the last dimension whatever `dim` is",
        {"softmax": _softmax_last_dim},
    )
)


def _softmax_no_shift(c: NumpyCase) -> np.ndarray | None:
    x, dim = f64(c.inputs["in_features"]), _softmax_dim(c)
    e = float32_exp(x)
    total = e.sum(axis=dim, keepdims=True)
    if np.isfinite(e).all() and (total > 0).all():
        return None  # nothing overflows: the same function, up to rounding
    with np.errstate(invalid="ignore", divide="ignore"):
        return e / total


MISTAKES.append(
    Mistake(
        "softmax_without_max_shift",
        "softmax exponentiates without subtracting the maximum first: exp overflows to inf "
        "and inf / inf is NaN; softmax(x) = softmax(x - max(x))",
        {"softmax": _softmax_no_shift},
    )
)


def _swiglu_swapped(c: NumpyCase) -> np.ndarray:
    w = c.weights
    return oracle.swiglu(c.inputs["in_features"], w["w3.weight"], w["w2.weight"], w["w1.weight"])


def _swapped_w1_w3(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
    w1, w3 = block["ffn.w1.weight"], block["ffn.w3.weight"]
    return dict(block) | {"ffn.w1.weight": w3, "ffn.w3.weight": w1}


MISTAKES.append(
    Mistake(
        "swiglu_w1_w3_swapped",
        "SwiGLU gates the wrong branch: the SiLU goes on W1 x, W2(silu(W1 x) * W3 x)",
        {"swiglu": _swiglu_swapped} | block_change(_swapped_w1_w3),
    )
)


def _mean_absolute_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    x = f64(x)
    return x / (np.mean(np.abs(x), axis=-1, keepdims=True) + eps) * f64(gain)


MISTAKES.append(
    Mistake(
        "rmsnorm_by_mean_absolute",
        "RMSNorm divides by the mean absolute value, mean(|x|) + eps; it divides by the root "
        "mean square, sqrt(mean(x²) + eps)",
        {
            "rmsnorm": lambda c: _mean_absolute_norm(
                c.inputs["in_features"], c.weights["weight"], c.params["eps"]
            )
        }
        | everywhere(Parts(norm=_mean_absolute_norm), (BLOCK, *LM)),
    )
)


def _rmsnorm_without_eps(c: NumpyCase) -> np.ndarray:
    x = f64(c.inputs["in_features"])
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True)) * f64(c.weights["weight"])


MISTAKES.append(
    Mistake(
        "rmsnorm_without_eps",
        "RMSNorm divides by sqrt(mean(x²)) without eps; eps is added to the mean square: "
        "x / sqrt(mean(x²) + eps)",
        {"rmsnorm": _rmsnorm_without_eps},
        graded=True,
    )
)


def _rmsnorm_whole_tensor(c: NumpyCase) -> np.ndarray | None:
    x = f64(c.inputs["in_features"])
    if x.size == x.shape[-1]:
        return None  # a single vector: its own mean is the whole tensor's
    return x / np.sqrt(np.mean(x**2) + c.params["eps"]) * f64(c.weights["weight"])


MISTAKES.append(
    Mistake(
        "rmsnorm_mean_over_whole_tensor",
        "RMSNorm takes the mean of x² over the whole tensor; each vector is normalised by its "
        "own mean over the last dimension (mean(x², dim=-1, keepdim=True))",
        {"rmsnorm": _rmsnorm_whole_tensor},
    )
)


def _rmsnorm_gain_added(c: NumpyCase) -> np.ndarray:
    normalised = oracle.rmsnorm(c.inputs["in_features"], 1.0, c.params["eps"])
    return normalised + f64(c.weights["weight"])


MISTAKES.append(
    Mistake(
        "rmsnorm_gain_added",
        "RMSNorm adds its gain to x / RMS(x); the gain multiplies it elementwise",
        {"rmsnorm": _rmsnorm_gain_added},
    )
)


def _rmsnorm_without_sqrt(c: NumpyCase) -> np.ndarray:
    x = f64(c.inputs["in_features"])
    return x / (np.mean(x**2, axis=-1, keepdims=True) + c.params["eps"]) * f64(c.weights["weight"])


MISTAKES.append(
    Mistake(
        "rmsnorm_without_sqrt",
        "RMSNorm divides by mean(x²) + eps, the mean square; it divides by its square root, "
        "sqrt(mean(x²) + eps)",
        {"rmsnorm": _rmsnorm_without_sqrt},
    )
)


def _layernorm_uncentred(c: NumpyCase) -> np.ndarray:
    x = f64(c.inputs["in_features"])
    var = np.var(x, axis=-1, keepdims=True)
    return x / np.sqrt(var + c.params["eps"]) * f64(c.weights["weight"]) + c.weights["bias"]


MISTAKES.append(
    Mistake(
        "layernorm_not_centred",
        "LayerNorm divides x by the standard deviation without subtracting the mean; it "
        "normalises x - mean(x)",
        {"layernorm": _layernorm_uncentred},
    )
)


def _layernorm_without_bias(c: NumpyCase) -> np.ndarray | None:
    bias = c.weights["bias"]
    if not np.any(bias):
        return None
    return oracle.layernorm(c.inputs["in_features"], c.weights["weight"], None, c.params["eps"])


MISTAKES.append(
    Mistake(
        "layernorm_without_bias",
        "LayerNorm leaves out its bias; the normalised x times the gain is shifted by the "
        "learned bias",
        {"layernorm": _layernorm_without_bias},
    )
)


def _silu_tanh(x: np.ndarray) -> np.ndarray:
    x = f64(x)
    return x * np.tanh(x)


def _swiglu_tanh_gate(x: np.ndarray, w1: np.ndarray, w2: np.ndarray, w3: np.ndarray) -> np.ndarray:
    return oracle.linear(_silu_tanh(oracle.linear(x, w1)) * oracle.linear(x, w3), w2)


def _swiglu_with(ffn, c: NumpyCase) -> np.ndarray:
    w = c.weights
    return ffn(c.inputs["in_features"], w["w1.weight"], w["w2.weight"], w["w3.weight"])


MISTAKES.append(
    Mistake(
        "silu_is_x_tanh",
        "SiLU returns x * tanh(x); SiLU is x * sigmoid(x)",
        {
            "silu": lambda c: _silu_tanh(c.inputs["in_features"]),
            "swiglu": lambda c: _swiglu_with(_swiglu_tanh_gate, c),
        }
        | everywhere(Parts(ffn=_swiglu_tanh_gate), (BLOCK, *LM)),
    )
)


def _gelu_erf_half(x: np.ndarray) -> np.ndarray:
    x = f64(x)
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / 2.0))


def _exact_gelu_only(gelu) -> Variant:
    return lambda c: gelu(c.inputs["in_features"]) if c.params["approximate"] == "none" else None


def _ffn_with(activation, c: NumpyCase) -> np.ndarray:
    w = c.weights
    hidden = activation(oracle.linear(c.inputs["in_features"], w["w1.weight"]))
    return oracle.linear(hidden, w["w2.weight"])


MISTAKES.append(
    Mistake(
        "gelu_erf_of_half_x",
        "GELU computes erf(x / 2); the exact GELU is 0.5 x (1 + erf(x / sqrt(2)))",
        {
            "gelu": lambda c: (
                _gelu_erf_half(c.inputs["in_features"])
                if c.params["approximate"] == "none"
                else None
            ),
            "positionwise_feedforward": lambda c: _ffn_with(_gelu_erf_half, c),
        },
    )
)


def _gelu_sigmoid(x: np.ndarray) -> np.ndarray:
    x = f64(x)
    return x * sigmoid(1.702 * x)


MISTAKES.append(
    Mistake(
        "gelu_is_x_sigmoid_1702x",
        "GELU uses the sigmoid approximation x * sigmoid(1.702 x); the exact GELU is "
        "0.5 x (1 + erf(x / sqrt(2))) (and the tanh form where approximate='tanh')",
        {
            "gelu": lambda c: _gelu_sigmoid(c.inputs["in_features"]),
            "positionwise_feedforward": lambda c: _ffn_with(_gelu_sigmoid, c),
        },
    )
)


def _gelu_tanh_without_cubic(c: NumpyCase) -> np.ndarray | None:
    if c.params["approximate"] != "tanh":
        return None
    x = f64(c.inputs["in_features"])
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * x))


MISTAKES.append(
    Mistake(
        "gelu_tanh_without_cubic_term",
        "GELU's tanh form leaves out the cubic term: tanh(sqrt(2/π) x); it is "
        "0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))",
        {"gelu": _gelu_tanh_without_cubic},
    )
)


MISTAKES.append(
    Mistake(
        "feedforward_relu_for_gelu",
        "the feed-forward applies ReLU between its two matrices; it applies GELU: w2(gelu(w1 x))",
        {"positionwise_feedforward": lambda c: _ffn_with(lambda h: np.maximum(h, 0.0), c)},
    )
)


def _log_softmax(c: NumpyCase) -> np.ndarray:
    x, dim = f64(c.inputs["in_features"]), _softmax_dim(c)
    shifted = x - np.max(x, axis=dim, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))


MISTAKES.append(
    Mistake(
        "softmax_returns_log_softmax",
        "softmax returns the log-probabilities, x - max - log(sum(exp(x - max))); softmax "
        "returns exp(x - max) / sum(exp(x - max))",
        {"softmax": _log_softmax},
    )
)


# Where every sum of exp(x - max) is this close to 1 (one entry dominates each slice), an
# unnormalised softmax is within the tolerance of the right one.
NEARLY_ONE = 1e-5


def _softmax_unnormalised(c: NumpyCase) -> np.ndarray | None:
    x, dim = f64(c.inputs["in_features"]), _softmax_dim(c)
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return None if np.all(e.sum(axis=dim) - 1 < NEARLY_ONE) else e


MISTAKES.append(
    Mistake(
        "softmax_not_normalised",
        "softmax returns exp(x - max) without dividing by its sum (or divides by the largest "
        "exp, which is 1); divide by sum(exp(x - max)) along dim",
        {"softmax": _softmax_unnormalised},
    )
)


def _softmax_first_dim(c: NumpyCase) -> np.ndarray | None:
    return None if _softmax_dim(c) == 0 else oracle.softmax(c.inputs["in_features"], 0)


MISTAKES.append(
    Mistake(
        "softmax_over_first_dim",
        "softmax normalises over dimension 0 whatever `dim` is",
        {"softmax": _softmax_first_dim},
    )
)


def _swiglu_gelu_gate(x: np.ndarray, w1: np.ndarray, w2: np.ndarray, w3: np.ndarray) -> np.ndarray:
    return oracle.linear(oracle.gelu(oracle.linear(x, w1)) * oracle.linear(x, w3), w2)


MISTAKES.append(
    Mistake(
        "swiglu_gelu_gate",
        "SwiGLU gates with GELU (GEGLU, or a SiLU that computes GELU); SwiGLU gates with "
        "SiLU: w2(silu(w1 x) * w3 x)",
        {"swiglu": lambda c: _swiglu_with(_swiglu_gelu_gate, c)}
        | everywhere(Parts(ffn=_swiglu_gelu_gate), (BLOCK, *LM)),
    )
)


def _swiglu_silu_both(x: np.ndarray, w1: np.ndarray, w2: np.ndarray, w3: np.ndarray) -> np.ndarray:
    return oracle.linear(oracle.silu(oracle.linear(x, w1)) * oracle.silu(oracle.linear(x, w3)), w2)


MISTAKES.append(
    Mistake(
        "swiglu_silu_on_both_branches",
        "SwiGLU applies SiLU to both branches; only the gate is activated: w2(silu(w1 x) * w3 x)",
        {"swiglu": lambda c: _swiglu_with(_swiglu_silu_both, c)}
        | everywhere(Parts(ffn=_swiglu_silu_both), (BLOCK, *LM)),
    )
)


def _embed_by_position(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return f64(table)[np.broadcast_to(np.arange(np.shape(ids)[-1]), np.shape(ids))]


MISTAKES.append(
    Mistake(
        "embedding_indexed_by_position",
        "the embedding looks up each token's position (0 … seq-1); it looks up the token id: "
        "weight[token_ids]",
        {"embedding": lambda c: _embed_by_position(c.weights["weight"], c.inputs["token_ids"])}
        | everywhere(Parts(embed=_embed_by_position), LM),
    )
)


def _centred_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    x = f64(x)
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt(np.mean(centred**2, -1, keepdims=True) + eps) * f64(gain)


def _rmsnorm_with(norm) -> Variant:
    """The `rmsnorm` family's variant of a mistaken norm computed in float32 and returned in
    the input's dtype: in float16, values past its range become ±inf."""

    def variant(c: NumpyCase) -> np.ndarray:
        out = norm(c.inputs["in_features"], c.weights["weight"], c.params["eps"])
        if c.params.get("dtype") != "float16":
            return out
        with np.errstate(over="ignore"):  # past float16's range is inf, as the cast gives
            return round_to_float16(out)

    return variant


MISTAKES.append(
    Mistake(
        "rmsnorm_centred",
        "RMSNorm subtracts the mean first, as LayerNorm does; RMSNorm does not centre: "
        "x / sqrt(mean(x²) + eps) · g",
        {"rmsnorm": _rmsnorm_with(_centred_norm)}
        | everywhere(Parts(norm=_centred_norm), (BLOCK, *LM)),
    )
)


def _sum_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    x = f64(x)
    return x / np.sqrt(np.sum(x**2, -1, keepdims=True) + eps) * f64(gain)


MISTAKES.append(
    Mistake(
        "rmsnorm_sum_not_mean",
        "RMSNorm divides by sqrt(sum(x²) + eps), a sum where the mean belongs; it divides by "
        "sqrt(mean(x²) + eps), the sum over d_model divided by d_model",
        {"rmsnorm": _rmsnorm_with(_sum_norm)} | everywhere(Parts(norm=_sum_norm), (BLOCK, *LM)),
    )
)


def _rsqrt_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    x = f64(x)
    return x / (1.0 / np.sqrt(np.mean(x**2, -1, keepdims=True)) + eps) * f64(gain)


MISTAKES.append(
    Mistake(
        "rmsnorm_divides_by_rsqrt",
        "RMSNorm divides by rsqrt(mean(x²)) + eps, the reciprocal of the RMS, and so "
        "multiplies by the RMS; it multiplies by rsqrt(mean(x²) + eps)",
        {"rmsnorm": _rmsnorm_with(_rsqrt_norm)},
    )
)


def _diagonal(w: np.ndarray) -> np.ndarray:
    return np.diag(np.diag(f64(w)))


def _linear_diagonal(c: NumpyCase) -> np.ndarray | None:
    w = c.weights["weight"]
    return None if w.shape[0] != w.shape[1] else f64(c.inputs["in_features"]) * np.diag(f64(w))


def _projections_diagonal(block: Mapping[str, np.ndarray], _: int) -> dict[str, np.ndarray]:
    names = [f"attn.{p}.weight" for p in ("q_proj", "k_proj", "v_proj", "output_proj")]
    return dict(block) | {n: _diagonal(block[n]) for n in names}


MISTAKES.append(
    Mistake(
        "linear_einsum_diagonal",
        "Linear multiplies each feature by the weight's diagonal, x · diag(W): an einsum that "
        "gives both axes of W one name ('... d, d d -> ... d') takes its diagonal; name them "
        "apart: '... d_in, d_out d_in -> ... d_out'",
        {
            "linear": _linear_diagonal,
            MHA: mha_block_change(_projections_diagonal),
            MHA_ROPE: mha_block_change(_projections_diagonal),
        },
    )
)


def _silu_of_minus_x(x: np.ndarray) -> np.ndarray:
    x = f64(x)
    return x * sigmoid(-x)


def _swiglu_minus_x_gate(
    x: np.ndarray, w1: np.ndarray, w2: np.ndarray, w3: np.ndarray
) -> np.ndarray:
    return oracle.linear(_silu_of_minus_x(oracle.linear(x, w1)) * oracle.linear(x, w3), w2)


MISTAKES.append(
    Mistake(
        "silu_sigmoid_of_minus_x",
        "SiLU returns x · sigmoid(-x) = x / (1 + exp(x)), a sign lost in the exponent; SiLU is "
        "x · sigmoid(x) = x / (1 + exp(-x))",
        {
            "silu": lambda c: _silu_of_minus_x(c.inputs["in_features"]),
            "swiglu": lambda c: _swiglu_with(_swiglu_minus_x_gate, c),
        }
        | everywhere(Parts(ffn=_swiglu_minus_x_gate), (BLOCK, *LM)),
    )
)


def _softmax_minus_sum(c: NumpyCase) -> np.ndarray:
    x, dim = f64(c.inputs["in_features"]), _softmax_dim(c)
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e - e.sum(axis=dim, keepdims=True)


MISTAKES.append(
    Mistake(
        "softmax_subtracts_sum",
        "softmax subtracts the sum of the exponentials, exp(x - max) - sum; it divides by it: "
        "exp(x - max) / sum(exp(x - max)) along dim",
        {"softmax": _softmax_minus_sum},
    )
)


def _softmax_global_max(c: NumpyCase) -> np.ndarray | None:
    """exp(x - max(x)) over the whole tensor, in float32: a slice far below the largest
    element underflows to zeros and 0/0 is NaN. Slices whose exponentials are all normal
    floats equal the true softmax; those partly subnormal or partly flushed to 0 cannot be
    reproduced to the tolerance and are masked (left out of the fingerprint)."""
    x, dim = f64(c.inputs["in_features"]), _softmax_dim(c)
    shifted = x - x.max()
    # A margin of 1 on either side of float32's thresholds, for the rounding of x - max.
    zero = (shifted < FLOAT32_EXP_UNDERFLOW - 1).all(axis=dim, keepdims=True)
    normal = (shifted > FLOAT32_EXP_SUBNORMAL + 1).all(axis=dim, keepdims=True)
    if not zero.any():
        return None
    truth = oracle.softmax(x, dim)
    out = np.where(zero, np.nan, truth)
    return np.ma.masked_array(out, np.broadcast_to(~(zero | normal), out.shape))


MISTAKES.append(
    Mistake(
        "softmax_max_over_whole_tensor",
        "softmax subtracts the largest element of the whole tensor (x.max() without dim), so "
        "a slice far below it underflows to zeros and 0/0 is NaN; subtract each slice's own "
        "max along dim (keepdim=True)",
        {"softmax": _softmax_global_max},
    )
)


# The eps a norm that ignores its argument usually hard-codes: the assignment's default.
DEFAULT_EPS = 1e-5


def _rmsnorm_eps_ignored(c: NumpyCase) -> np.ndarray | None:
    if c.params["eps"] == DEFAULT_EPS:
        return None
    return oracle.rmsnorm(c.inputs["in_features"], c.weights["weight"], DEFAULT_EPS)


MISTAKES.append(
    Mistake(
        "rmsnorm_eps_ignored",
        "RMSNorm ignores the eps it is given and uses 1e-5; it adds the eps argument: "
        "x / sqrt(mean(x²) + eps)",
        {"rmsnorm": _rmsnorm_eps_ignored},
    )
)


def _rmsnorm_dim_1(c: NumpyCase) -> np.ndarray | None:
    x = f64(c.inputs["in_features"])
    if x.ndim < 3:
        return None  # dim 1 is the last dimension
    return (
        x
        / np.sqrt(np.mean(x**2, axis=1, keepdims=True) + c.params["eps"])
        * f64(c.weights["weight"])
    )


MISTAKES.append(
    Mistake(
        "rmsnorm_mean_over_dim_1",
        "RMSNorm takes the mean of x² over dim=1, the sequence of a (batch, seq, d_model) "
        "input; each vector is normalised over its own d_model entries: dim=-1",
        {"rmsnorm": _rmsnorm_dim_1},
    )
)


def _gated_by(activation):
    """SwiGLU with `activation` in the gate's place: w2(activation(w1 x) * w3 x)."""

    def ffn(x: np.ndarray, w1: np.ndarray, w2: np.ndarray, w3: np.ndarray) -> np.ndarray:
        return oracle.linear(activation(oracle.linear(x, w1)) * oracle.linear(x, w3), w2)

    return ffn


def _silu_mistake(activation) -> dict[str, Variant]:
    """Variants of a mistaken SiLU: in SiLU itself, in SwiGLU's gate, and in every
    feed-forward of the block and the LMs."""
    ffn = _gated_by(activation)
    return {
        "silu": lambda c: activation(f64(c.inputs["in_features"])),
        "swiglu": lambda c: _swiglu_with(ffn, c),
    } | everywhere(Parts(ffn=ffn), (BLOCK, *LM))


MISTAKES.append(
    Mistake(
        "silu_doubled",
        "SiLU returns 2 · x · sigmoid(x), twice its value; SiLU is x · sigmoid(x)",
        _silu_mistake(lambda x: 2.0 * oracle.silu(x)),
    )
)


MISTAKES.append(
    Mistake(
        "silu_applied_twice",
        "SiLU is applied twice, silu(silu(x)) (a SiLU called on what is already activated); "
        "SiLU is x · sigmoid(x), applied once",
        _silu_mistake(lambda x: oracle.silu(oracle.silu(x))),
    )
)


MISTAKES.append(
    Mistake(
        "silu_sigmoid_squared",
        "SiLU multiplies by the sigmoid twice, x · sigmoid(x) · sigmoid(x); SiLU is x · sigmoid(x)",
        _silu_mistake(lambda x: f64(x) * sigmoid(f64(x)) ** 2),
    )
)


MISTAKES.append(
    Mistake(
        "silu_is_gelu",
        "SiLU returns GELU(x) (F.gelu); SiLU is x · sigmoid(x) (F.silu)",
        # In SwiGLU and everything built on it, the output of swiglu_gelu_gate: one output
        # under two names there, where the SiLU family's own failures say which is meant.
        _silu_mistake(lambda x: oracle.gelu(f64(x))),
    )
)


def _ffn_mistake(ffn) -> dict[str, Variant]:
    """Variants of a mistaken SwiGLU: in SwiGLU itself and in every feed-forward of the
    block and the LMs."""
    return {"swiglu": lambda c: _swiglu_with(ffn, c)} | everywhere(Parts(ffn=ffn), (BLOCK, *LM))


MISTAKES.append(
    Mistake(
        "swiglu_sum_not_product",
        "SwiGLU adds its two branches, w2(silu(w1 x) + w3 x); the gate multiplies them "
        "elementwise: w2(silu(w1 x) * w3 x)",
        _ffn_mistake(
            lambda x, w1, w2, w3: oracle.linear(
                oracle.silu(oracle.linear(x, w1)) + oracle.linear(x, w3), w2
            )
        ),
    )
)


MISTAKES.append(
    Mistake(
        "swiglu_silu_of_product",
        "SwiGLU applies SiLU to the product of its branches, w2(silu(w1 x * w3 x)); only the "
        "gate is activated: w2(silu(w1 x) * w3 x)",
        _ffn_mistake(
            lambda x, w1, w2, w3: oracle.linear(
                oracle.silu(oracle.linear(x, w1) * oracle.linear(x, w3)), w2
            )
        ),
    )
)


MISTAKES.append(
    Mistake(
        "swiglu_without_silu",
        "SwiGLU leaves out the SiLU, w2(w1 x * w3 x); the gate is activated: w2(silu(w1 x) * w3 x)",
        _ffn_mistake(_gated_by(f64)),
    )
)


MISTAKES.append(
    Mistake(
        "swiglu_without_gate",
        "SwiGLU leaves out its gate, w2(w3 x); the branch w3 x is gated by silu(w1 x): "
        "w2(silu(w1 x) * w3 x)",
        _ffn_mistake(lambda x, w1, w2, w3: oracle.linear(oracle.linear(x, w3), w2)),
    )
)


MISTAKES.append(
    Mistake(
        "swiglu_without_w3",
        "SwiGLU is w2(silu(w1 x)), a feed-forward without its gated branch w3 x; it is "
        "w2(silu(w1 x) * w3 x)",
        _ffn_mistake(lambda x, w1, w2, w3: oracle.linear(oracle.silu(oracle.linear(x, w1)), w2)),
    )
)


MISTAKES.append(
    Mistake(
        "swiglu_w1_for_both_branches",
        "SwiGLU uses w1 for both branches, w2(silu(w1 x) * w1 x), and never w3; the second "
        "branch is w3 x: w2(silu(w1 x) * w3 x)",
        _ffn_mistake(
            lambda x, w1, w2, w3: oracle.linear(
                oracle.silu(oracle.linear(x, w1)) * oracle.linear(x, w1), w2
            )
        ),
    )
)


def _norm_mistake(norm) -> dict[str, Variant]:
    """Variants of a mistaken RMSNorm: in the norm itself and in every norm of the block
    and the LMs."""
    return {"rmsnorm": _rmsnorm_with(norm)} | everywhere(Parts(norm=norm), (BLOCK, *LM))


def _unless_unit_gain(variant: Variant) -> Variant:
    """`variant`, None where the gain is all ones (a mistake in where it multiplies cannot
    show)."""
    return lambda c: None if np.all(c.weights["weight"] == 1) else variant(c)


def _scaled_input_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    y = f64(x) * f64(gain)
    return y / np.sqrt(np.mean(y**2, -1, keepdims=True) + eps)


MISTAKES.append(
    Mistake(
        "rmsnorm_normalises_scaled_input",
        "RMSNorm multiplies by the gain first and normalises the product, (x · g) / RMS(x · g); "
        "the RMS is x's own: x / sqrt(mean(x²) + eps) · g",
        _norm_mistake(_scaled_input_norm)
        | {"rmsnorm": _unless_unit_gain(_rmsnorm_with(_scaled_input_norm))},
    )
)


def _variance_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    x = f64(x)
    return x / np.sqrt(np.var(x, -1, ddof=1, keepdims=True) + eps) * f64(gain)


def _full_precision(variant: Variant) -> Variant:
    """`variant` on float32 cases; None on a half-precision one."""
    return lambda c: None if c.params.get("dtype") in ("bfloat16", "float16") else variant(c)


MISTAKES.append(
    Mistake(
        "rmsnorm_by_variance",
        "RMSNorm divides by sqrt(x.var(-1) + eps), the variance (centred, over d_model - 1) "
        "where the mean square belongs; it divides by sqrt(mean(x²) + eps)",
        # In half precision d/(d-1) and the mean's square nearly cancel (by 1/d_model on
        # average): the output stays within bfloat16's one-ulp tolerance, and often float16's.
        _norm_mistake(_variance_norm) | {"rmsnorm": _full_precision(_rmsnorm_with(_variance_norm))},
    )
)


def _rmsnorm_eps_fixed(value: float) -> Variant:
    def variant(c: NumpyCase) -> np.ndarray | None:
        if c.params["eps"] == value:
            return None
        return oracle.rmsnorm(c.inputs["in_features"], c.weights["weight"], value)

    return variant


# 1e-6 is the other eps students hard-code (LLaMA's). A smaller one is lost against any
# mean square float32 holds to its precision, which rmsnorm_without_eps names.
def _norm_eps_1e_6(x: np.ndarray, gain: np.ndarray, _: float) -> np.ndarray:
    return oracle.rmsnorm(x, gain, 1e-6)


# How many times its family's tolerance a graded mistake's output must differ from the
# correct one by, somewhere, for its variant to be given (`_clearly`).
CLEARLY = 4.0


def _clearly(variants: Mapping[str, Variant]) -> dict[str, Variant]:
    """`variants`, each None on a case where its output is within `CLEARLY` times the family's
    tolerance of the correct one: a graded mistake whose effect there is about the tolerance
    fails or passes by the rounding of the implementation making it, and would be named or
    not by the same chance. Where it is given, a float32 output making the mistake fails by
    far and is named."""

    def clearly(family: str, variant: Variant) -> Variant:
        tolerance = BY_NAME[family].tolerance or {"rtol": 0.0, "atol": 0.0}

        def given(c: NumpyCase) -> np.ndarray | None:
            out = variant(c)
            if out is None:
                return None
            truth = f64(c.expected)
            bound = tolerance["atol"] + tolerance["rtol"] * np.abs(truth)
            return out if np.max(np.abs(out - truth) / bound) > CLEARLY else None

        return given

    return {family: clearly(family, v) for family, v in variants.items()}


MISTAKES.append(
    Mistake(
        "rmsnorm_eps_ignored_1e_6",
        "RMSNorm uses eps = 1e-6 whatever eps it is given (in the block and the model too, "
        "where the contract's is 1e-5); it adds the eps argument: x / sqrt(mean(x²) + eps)",
        {"rmsnorm": _rmsnorm_eps_fixed(1e-6)}
        | _clearly(everywhere(Parts(norm=_norm_eps_1e_6), (BLOCK, *LM))),
        graded=True,  # against a mean square far above both eps, invisible
    )
)


def _linear_reshaped(c: NumpyCase) -> np.ndarray | None:
    w = f64(c.weights["weight"])
    d_out, d_in = w.shape
    if d_out == d_in:
        return None  # the same as x @ W, linear_weight_not_transposed
    return f64(c.inputs["in_features"]) @ w.reshape(d_in, d_out)


MISTAKES.append(
    Mistake(
        "linear_weight_reshaped",
        "Linear computes x @ W.reshape(d_in, d_out) (or .view): a reshape reorders no "
        "element, so the weight's rows are cut up rather than transposed; y = x @ W.T",
        {"linear": _linear_reshaped},
    )
)


def _embed_ids_minus_one(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """table[ids - 1], Python's indexing: id 0 reads the last row."""
    return f64(table)[np.asarray(ids) - 1]


MISTAKES.append(
    Mistake(
        "embedding_ids_minus_one",
        "the embedding looks up weight[token_ids - 1], as if ids counted from 1 (id 0 reads "
        "the last row); ids count from 0: weight[token_ids]",
        {"embedding": lambda c: _embed_ids_minus_one(c.weights["weight"], c.inputs["token_ids"])}
        | everywhere(Parts(embed=_embed_ids_minus_one), LM),
    )
)


def _softmax_over_whole_tensor(c: NumpyCase) -> np.ndarray | None:
    x = f64(c.inputs["in_features"])
    if x.size == x.shape[_softmax_dim(c)]:
        return None  # a single slice
    e = np.exp(x - x.max())
    return e / e.sum()


MISTAKES.append(
    Mistake(
        "softmax_over_whole_tensor",
        "softmax normalises over every element of the tensor (a flattened softmax, or sum() "
        "and max() without dim); each slice along dim sums to 1",
        {"softmax": _softmax_over_whole_tensor},
    )
)


def _softmax_sum_over_whole_tensor(c: NumpyCase) -> np.ndarray | None:
    x, dim = f64(c.inputs["in_features"]), _softmax_dim(c)
    if x.size == x.shape[dim]:
        return None
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / e.sum()


MISTAKES.append(
    Mistake(
        "softmax_sum_over_whole_tensor",
        "softmax divides by the sum of the whole tensor's exponentials (sum() without dim); "
        "it divides by their sum along dim: sum(exp(x - max), dim=dim, keepdim=True)",
        {"softmax": _softmax_sum_over_whole_tensor},
    )
)


def _softmax_max_over_last_dim(c: NumpyCase) -> np.ndarray | None:
    """exp(x - max over the last dim) in float32, summed along dim. The shift makes every
    exponent ≤ 0, so nothing overflows, but a slice along dim whose exponentials all underflow
    is 0/0, NaN; slices partly subnormal or partly flushed to 0 are masked (float32's
    rounding there cannot be reproduced)."""
    x, dim = f64(c.inputs["in_features"]), _softmax_dim(c)
    if dim == x.ndim - 1:
        return None
    shifted = x - x.max(-1, keepdims=True)
    zero = (shifted < FLOAT32_EXP_UNDERFLOW - 1).all(axis=dim, keepdims=True)
    normal = (shifted > FLOAT32_EXP_SUBNORMAL + 1).all(axis=dim, keepdims=True)
    e = float32_exp(shifted)
    with np.errstate(invalid="ignore", over="ignore"):
        out = e / e.sum(axis=dim, keepdims=True)
    out = np.where(zero, np.nan, out)
    return np.ma.masked_array(out, np.broadcast_to(~(zero | normal), out.shape))


MISTAKES.append(
    Mistake(
        "softmax_max_over_last_dim",
        "softmax subtracts the maximum along the last dimension and normalises along dim; "
        "the shift cancels only when it is constant along dim: take the max along dim "
        "(keepdim=True)",
        {"softmax": _softmax_max_over_last_dim},
    )
)
