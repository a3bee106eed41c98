"""The oracle's sublayer traces (`transformer_lm_sublayers`, `transformer_block_sublayers`),
whose inputs and outputs the first-difference report compares a failing model with: they
are the forward pass that `transformer_lm` / `transformer_block` compute, bit for bit, in
every architecture variant, and each sublayer's input is what the architecture feeds it.

A test of the harness (not graded): it imports the oracle, which graded runs and the
student handout do not have.
"""

import numpy as np
import pytest

from cs336_staff import oracle
from cs336_staff.fixturegen.weights import lm_weights
from cs336_staff.oracle.model import transformer_block_sublayers, transformer_lm_sublayers

SIZES = {
    "vocab_size": 37,
    "context_length": 10,
    "d_model": 16,
    "num_layers": 2,
    "num_heads": 2,
    "d_ff": 24,
}
VARIANTS = {
    "default": {},
    "post_norm": {"norm_position": "post"},
    "no_norm": {"norm": "none"},
    "layernorm_bias_gelu": {"norm": "layernorm", "bias": True, "ffn": "gelu"},
    "learned_positions_tied": {"positions": "learned", "tie_embeddings": True},
}


def _model(variant: str) -> tuple[dict, dict, np.ndarray]:
    config = SIZES | VARIANTS[variant]
    rng = np.random.default_rng(list(variant.encode()))
    return config, lm_weights(rng, config), rng.integers(0, SIZES["vocab_size"], (2, 9))


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_lm_trace_is_the_forward_pass(variant):
    config, weights, ids = _model(variant)
    trace = transformer_lm_sublayers(ids, weights, config)
    assert np.array_equal(trace["lm_head"][1], oracle.transformer_lm(ids, weights, config))
    # In the order they run: a post-norm block normalises after each sublayer.
    post = config.get("norm_position") == "post"
    per_layer = ["attn", "ln1", "ffn", "ln2"] if post else ["ln1", "attn", "ln2", "ffn"]
    norms = config.get("norm") != "none"
    if not norms:
        per_layer = ["attn", "ffn"]
    final = ["ln_final"] if norms and not post else []
    expected = [f"layers.{i}.{name}" for i in range(2) for name in per_layer]
    assert list(trace) == [*expected, *final, "lm_head"]


def test_each_sublayer_gets_what_the_pre_norm_block_feeds_it():
    config, weights, ids = _model("default")
    trace = transformer_lm_sublayers(ids, weights, config)
    for i in range(2):
        layer = f"layers.{i}."
        assert trace[layer + "attn"][0] is trace[layer + "ln1"][1]
        residual = trace[layer + "ln1"][0] + trace[layer + "attn"][1]
        assert np.array_equal(trace[layer + "ln2"][0], residual)
        assert trace[layer + "ffn"][0] is trace[layer + "ln2"][1]
    assert np.array_equal(
        trace["layers.1.ln1"][0], trace["layers.0.ln2"][0] + trace["layers.0.ffn"][1]
    )
    assert trace["lm_head"][0] is trace["ln_final"][1]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_block_trace_is_the_block(variant):
    config, weights, _ = _model(variant)
    prefix = "layers.0."
    block = {k.removeprefix(prefix): v for k, v in weights.items() if k.startswith(prefix)}
    x = np.random.default_rng(0).standard_normal((2, 7, SIZES["d_model"]))
    trace = transformer_block_sublayers(x, block, num_heads=2, config=config)
    out = oracle.transformer_block(x, block, num_heads=2, config=config)
    if config.get("norm_position") == "post":
        assert np.array_equal(trace["ln2"][1], out)
    else:
        assert np.array_equal(x + trace["attn"][1] + trace["ffn"][1], out)
