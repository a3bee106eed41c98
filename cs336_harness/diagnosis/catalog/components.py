"""Known mistakes in the components: Linear, Embedding, the norms, the activations, softmax,
SwiGLU and the position-wise feed-forward (and where each shows in the models built from them)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from cs336_harness import oracle
from cs336_harness.diagnosis.catalog.mistake import Mistake
from cs336_harness.diagnosis.catalog.numerics import (
    float32_exp,
    round_to_bfloat16,
    round_to_float16,
    sigmoid,
)
from cs336_harness.diagnosis.catalog.reading import (
    CONFIG_LM,
    block_change,
    f64,
    gain_names,
    oracle_config,
    run_config_lm,
    unit_gains,
)
from cs336_harness.diagnosis.numpy_cases import NumpyCase

MISTAKES: list[Mistake] = []


def _linear_not_transposed(c: NumpyCase) -> np.ndarray | None:
    w = c.weights["weight"]
    return None if w.shape[0] != w.shape[1] else f64(c.inputs["in_features"]) @ f64(w)


MISTAKES.append(
    Mistake(
        "linear_weight_not_transposed",
        "Linear computes x @ W; W is stored (d_out, d_in), so y = x @ W.T",
        {"linear": _linear_not_transposed},
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
