"""The oracle's hand-written gradients agree with finite differences of the oracle's forward.

Each case draws small random inputs, weights and an upstream gradient, and checks every
gradient the backward returns (inputs and parameters) along two random directions with
`check_gradients`; the LM is checked in every architecture variant. Float64 NumPy only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from cs336_staff import oracle

DIRECTIONS = 2


def _normal(rng: np.random.Generator, *shape: int, std: float = 1.0) -> np.ndarray:
    return std * rng.standard_normal(shape)


def _check(
    forward: Callable[..., np.ndarray],
    grads_of: Callable[..., dict[str, np.ndarray]],
    inputs: dict[str, np.ndarray],
    rng: np.random.Generator,
) -> None:
    """`forward(**inputs)` and `grads_of(d_out=..., **inputs)` keyed like `inputs`."""
    d_out = _normal(rng, *np.shape(forward(**inputs)))
    grads = grads_of(d_out=d_out, **inputs)
    assert set(grads) == set(inputs), f"gradients {sorted(grads)} for inputs {sorted(inputs)}"
    oracle.check_gradients(lambda v: forward(**v), inputs, grads, d_out, rng, DIRECTIONS)


def _rename(grads: dict[str, np.ndarray], names: dict[str, str]) -> dict[str, np.ndarray]:
    return {names.get(k, k): v for k, v in grads.items()}


def case_linear(rng):
    def grads(x, weight, bias, d_out):
        return oracle.linear_backward(x, weight, d_out, bias)

    inputs = {"x": _normal(rng, 2, 3, 7), "weight": _normal(rng, 5, 7), "bias": _normal(rng, 5)}
    return oracle.linear, grads, inputs


def case_embedding(rng):
    ids = rng.integers(0, 6, (3, 4))
    ids[0, :2] = 2  # a repeated id sums its rows' gradients

    def forward(weight):
        return oracle.embedding(weight, ids)

    def grads(weight, d_out):
        return oracle.embedding_backward(weight, ids, d_out)

    return forward, grads, {"weight": _normal(rng, 6, 5)}


def case_rmsnorm(rng):
    def forward(x, weight):
        return oracle.rmsnorm(x, weight, 0.01)

    def grads(x, weight, d_out):
        return oracle.rmsnorm_backward(x, weight, d_out, 0.01)

    return forward, grads, {"x": _normal(rng, 3, 4, 8, std=0.3), "weight": _normal(rng, 8)}


def case_layernorm(rng):
    def grads(x, weight, bias, d_out):
        return oracle.layernorm_backward(x, weight, bias, d_out)

    inputs = {"x": _normal(rng, 3, 4, 8) + 2.0, "weight": _normal(rng, 8), "bias": _normal(rng, 8)}
    return oracle.layernorm, grads, inputs


def case_silu(rng):
    return oracle.silu, oracle.silu_backward, {"x": _normal(rng, 4, 9, std=4.0)}


def _gelu_case(approximate: str):
    def make(rng):
        def forward(x):
            return oracle.gelu(x, approximate)

        def grads(x, d_out):
            return oracle.gelu_backward(x, d_out, approximate)

        return forward, grads, {"x": _normal(rng, 4, 9, std=3.0)}

    return make


def _softmax_case(dim: int):
    def make(rng):
        def forward(x):
            return oracle.softmax(x, dim)

        def grads(x, d_out):
            return oracle.softmax_backward(x, dim, d_out)

        return forward, grads, {"x": _normal(rng, 3, 4, 5, std=2.0)}

    return make


def case_cross_entropy(rng):
    targets = rng.integers(0, 7, (3, 4))

    def forward(logits):
        return np.asarray(oracle.cross_entropy(logits, targets))

    def grads(logits, d_out):
        return oracle.cross_entropy_backward(logits, targets, float(d_out))

    return forward, grads, {"logits": _normal(rng, 3, 4, 7, std=3.0)}


def case_swiglu(rng):
    names = {f"w{i}.weight": f"w{i}" for i in (1, 2, 3)} | {
        f"w{i}.bias": f"b{i}" for i in (1, 2, 3)
    }

    def forward(x, w1, w2, w3, b1, b2, b3):
        return oracle.swiglu(x, w1, w2, w3, b1, b2, b3)

    def grads(x, w1, w2, w3, b1, b2, b3, d_out):
        return _rename(oracle.swiglu_backward(x, w1, w2, w3, d_out, b1, b2, b3), names)

    inputs = {"x": _normal(rng, 2, 3, 6)}
    inputs |= {
        f"w{i}": _normal(rng, *shape, std=0.5)
        for i, shape in ((1, (10, 6)), (2, (6, 10)), (3, (10, 6)))
    }
    inputs |= {f"b{i}": _normal(rng, n, std=0.1) for i, n in ((1, 10), (2, 6), (3, 10))}
    return forward, grads, inputs


def _feedforward_case(activation: str, approximate: str):
    names = {"w1.weight": "w1", "w2.weight": "w2", "w1.bias": "b1", "w2.bias": "b2"}

    def make(rng):
        def forward(x, w1, w2, b1, b2):
            return oracle.feedforward(x, w1, w2, activation, approximate, b1, b2)

        def grads(x, w1, w2, b1, b2, d_out):
            return _rename(
                oracle.feedforward_backward(x, w1, w2, d_out, activation, approximate, b1, b2),
                names,
            )

        inputs = {"x": _normal(rng, 2, 3, 6), "w1": _normal(rng, 9, 6), "w2": _normal(rng, 6, 9)}
        return forward, grads, inputs | {"b1": _normal(rng, 9), "b2": _normal(rng, 6)}

    return make


def _rope_case(pairing: str):
    def make(rng):
        positions = rng.integers(0, 40, (3, 1, 5))

        def forward(x):
            return oracle.rope(x, positions, 100.0, pairing)

        def grads(x, d_out):
            return oracle.rope_backward(x, positions, 100.0, d_out, pairing)

        return forward, grads, {"x": _normal(rng, 3, 2, 5, 8)}

    return make


def _attention_case(masked: bool):
    def make(rng):
        # A (n, m) mask broadcast over (2, 3) leading dims, one query row fully masked.
        mask = rng.random((5, 7)) < 0.6 if masked else None
        if mask is not None:
            mask[:, 0], mask[3] = True, False

        def forward(q, k, v):
            return oracle.scaled_dot_product_attention(q, k, v, mask)

        def grads(q, k, v, d_out):
            return oracle.scaled_dot_product_attention_backward(q, k, v, d_out, mask)

        # V shared by the leading dims of Q and K: its gradient sums over them.
        inputs = {
            "q": _normal(rng, 2, 3, 5, 4),
            "k": _normal(rng, 2, 3, 7, 4),
            "v": _normal(rng, 7, 6),
        }
        return forward, grads, inputs

    return make


MHA_NAMES = {
    f"{p}_proj.{kind}": f"{p}_{kind}" for p in ("q", "k", "v") for kind in ("weight", "bias")
} | {"output_proj.weight": "o_weight", "output_proj.bias": "o_bias"}


def _mha_case(theta: float | None, pairing: str = "interleaved"):
    def make(rng):
        positions = np.sort(rng.integers(0, 30, (2, 5)), axis=-1)

        def forward(x, **w):
            return oracle.multihead_self_attention(
                x, w.pop("q_weight"), w.pop("k_weight"), w.pop("v_weight"), w.pop("o_weight"),
                2, theta=theta, positions=positions, pairing=pairing, **w,
            )  # fmt: skip

        def grads(x, d_out, **w):
            g = oracle.multihead_self_attention_backward(
                x, w.pop("q_weight"), w.pop("k_weight"), w.pop("v_weight"), w.pop("o_weight"),
                2, d_out, theta=theta, positions=positions, pairing=pairing, **w,
            )  # fmt: skip
            return _rename(g, MHA_NAMES)

        inputs = {"x": _normal(rng, 2, 5, 8)}
        inputs |= {f"{p}_weight": _normal(rng, 8, 8, std=0.5) for p in "qkvo"}
        return forward, grads, inputs | {f"{p}_bias": _normal(rng, 8, std=0.1) for p in "qkvo"}

    return make


CASES: dict[str, Callable[[np.random.Generator], tuple[Any, Any, dict]]] = {
    "linear": case_linear,
    "embedding": case_embedding,
    "rmsnorm": case_rmsnorm,
    "layernorm": case_layernorm,
    "silu": case_silu,
    "gelu_exact": _gelu_case("none"),
    "gelu_tanh": _gelu_case("tanh"),
    "softmax_last": _softmax_case(-1),
    "softmax_middle": _softmax_case(1),
    "cross_entropy": case_cross_entropy,
    "swiglu": case_swiglu,
    "feedforward_gelu": _feedforward_case("gelu", "tanh"),
    "feedforward_silu": _feedforward_case("silu", "none"),
    "rope_interleaved": _rope_case("interleaved"),
    "rope_half": _rope_case("half"),
    "attention_no_mask": _attention_case(False),
    "attention_masked": _attention_case(True),
    "mha": _mha_case(None),
    "mha_rope": _mha_case(10000.0),
    "mha_rope_half": _mha_case(100.0, "half"),
}


@pytest.mark.parametrize("name", CASES)
def test_component_gradients_match_finite_differences(name):
    rng = np.random.default_rng(list(name.encode()))
    _check(*CASES[name](rng), rng)


TINY_LM = {
    "vocab_size": 11,
    "context_length": 6,
    "d_model": 8,
    "num_layers": 2,
    "num_heads": 2,
    "d_ff": 12,
}
VARIANTS = {
    "default": {},
    "post_norm": {"norm_position": "post"},
    "no_norm_no_positions": {"norm": "none", "positions": "none"},
    "gpt2": {
        "norm": "layernorm",
        "positions": "learned",
        "ffn": "gelu",
        "gelu_approximate": "tanh",
        "bias": True,
        "tie_embeddings": True,
    },
    "silu_half_pairing": {"ffn": "silu", "rope_pairing": "half", "rope_theta": 100.0},
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_lm_parameter_gradients_match_finite_differences(variant):
    from cs336_staff.fixturegen.weights import lm_weights

    config = TINY_LM | VARIANTS[variant]
    rng = np.random.default_rng(list(variant.encode()))
    weights = {k: v.astype(np.float64) for k, v in lm_weights(rng, config).items()}
    # Five of six positions: learned position rows past the sequence get no gradient.
    ids = rng.integers(0, config["vocab_size"], (2, 5))
    ids[0, :2] = 3
    d_logits = _normal(rng, 2, 5, config["vocab_size"])
    grads = oracle.transformer_lm_backward(config, weights, ids, d_logits)
    assert set(grads) == set(oracle.lm_parameter_shapes(config))

    def forward(values):
        return oracle.transformer_lm(ids, values, config)

    oracle.check_gradients(forward, weights, grads, d_logits, rng, DIRECTIONS)


def test_block_gradients_match_finite_differences():
    from cs336_staff.fixturegen.weights import block_weights

    config = {"d_model": 8, "num_heads": 2, "d_ff": 12, "rope_theta": 100.0}
    rng = np.random.default_rng(5)
    weights = {k: v.astype(np.float64) for k, v in block_weights(rng, config).items()}
    x, positions = _normal(rng, 2, 5, 8), np.array([4, 0, 9, 9, 2])
    d_out = _normal(rng, 2, 5, 8)
    grads = oracle.transformer_block_backward(
        x, weights, d_out, num_heads=2, config=config, positions=positions
    )

    def forward(values):
        values = dict(values)
        return oracle.transformer_block(
            values.pop("x"), values, num_heads=2, config=config, positions=positions
        )

    oracle.check_gradients(forward, weights | {"x": x}, grads, d_out, rng, DIRECTIONS)


def test_the_check_catches_a_gradient_missing_a_term():
    # RMSNorm's gradient without the normaliser's own dependence on x: what a detached
    # normaliser would give.
    rng = np.random.default_rng(0)
    x, g, d_out = _normal(rng, 3, 8), _normal(rng, 8), _normal(rng, 3, 8)
    rms = np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + 1e-5)
    with pytest.raises(oracle.GradientCheckError, match="gradient wrt x"):
        oracle.check_gradients(
            lambda v: oracle.rmsnorm(v["x"], g), {"x": x}, {"x": d_out * g / rms}, d_out, rng
        )
