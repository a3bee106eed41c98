"""Cases for the core components of the default (LLaMA-style) architecture.

Each case exists to catch a class of mistakes, which its description names. Inputs are
O(1) unless a case is about magnitude, so that absolute and relative tolerances mean the
same thing across families.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from cs336_harness import oracle
from cs336_harness.fixturegen import evidence
from cs336_harness.fixturegen.draws import in_dtype, normal
from cs336_harness.fixturegen.weights import block_weights, linear_weight, lm_weights, norm_gain
from cs336_harness.fixturegen.writer import FixtureSet
from cs336_harness.oracle.backward import transformer_lm_backward
from cs336_harness.oracle.model import (
    Sublayers,
    transformer_block_sublayers,
    transformer_lm_sublayers,
)

REFERENCE_CONFIG = {
    "vocab_size": 10000,
    "context_length": 16,
    "d_model": 64,
    "num_layers": 3,
    "num_heads": 4,
    "d_ff": 128,
    "rope_theta": 10000.0,
}
MODEL_FILE = "model_weights.safetensors"
REFERENCE_BATCH = 4
# Component cases on the reference model run its first layer on this many positions.
REFERENCE_SEQ = 12


def _from_model(prefix: str) -> dict[str, Any]:
    return {"weights_file": MODEL_FILE, "weights_prefix": prefix}


def _sub(weights: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {k.removeprefix(prefix): v for k, v in weights.items() if k.startswith(prefix)}


def add_linear(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    rng = fs.rng("linear", "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64)
    w = model["layers.0.ffn.w1.weight"]
    fs.add(
        "linear",
        "reference_ffn_w1",
        "the reference model's w1 (64 -> 128) on a batch of sequences",
        {"d_in": 64, "d_out": 128} | _from_model("layers.0.ffn.w1."),
        {"in_features": x},
        oracle.linear(x, w),
    )
    rng = fs.rng("linear", "leading_dims")
    x, w = normal(rng, 2, 3, 5, 7), linear_weight(rng, 5, 7)
    fs.add(
        "linear",
        "leading_dims",
        "three leading dims, d_out < d_in (catches x @ W instead of x @ W.T)",
        {"d_in": 7, "d_out": 5},
        {"in_features": x},
        oracle.linear(x, w),
        {"weight": w},
    )
    rng = fs.rng("linear", "single_vector")
    x, w = normal(rng, 9), linear_weight(rng, 9, 9)
    fs.add(
        "linear",
        "single_vector",
        "a 1-D input with a square weight",
        {"d_in": 9, "d_out": 9},
        {"in_features": x},
        oracle.linear(x, w),
        {"weight": w},
    )


def add_embedding(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    vocab = REFERENCE_CONFIG["vocab_size"]
    rng = fs.rng("embedding", "reference")
    ids = rng.integers(0, vocab, (REFERENCE_BATCH, REFERENCE_SEQ))
    ids[0, :2] = [0, vocab - 1]
    fs.add(
        "embedding",
        "reference",
        "the reference token embeddings, including ids 0 and vocab-1",
        {"vocab_size": vocab, "d_model": 64} | _from_model("token_embeddings."),
        {"token_ids": ids},
        oracle.embedding(model["token_embeddings.weight"], ids),
    )
    rng = fs.rng("embedding", "any_shape")
    table, ids = normal(rng, 50, 8), rng.integers(0, 50, (2, 3, 4))
    fs.add(
        "embedding",
        "three_dim_ids",
        "ids of shape (2, 3, 4) into a 50 x 8 table",
        {"vocab_size": 50, "d_model": 8},
        {"token_ids": ids},
        oracle.embedding(table, ids),
        {"weight": table},
    )


def add_rmsnorm(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    gain = model["layers.0.ln1.weight"]
    rng = fs.rng("rmsnorm", "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64, std=2.0)
    fs.add(
        "rmsnorm",
        "reference_ln1",
        "the reference model's first norm gain (not all ones)",
        {"d_model": 64, "eps": 1e-5} | _from_model("layers.0.ln1."),
        {"in_features": x},
        oracle.rmsnorm(x, gain, 1e-5),
    )
    rng = fs.rng("rmsnorm", "small_magnitude")
    x = normal(rng, 3, 64, std=1e-3)
    fs.add(
        "rmsnorm",
        "small_magnitude",
        "RMS 1e-3, where eps inside vs outside the sqrt differs",
        {"d_model": 64, "eps": 1e-5},
        {"in_features": x},
        oracle.rmsnorm(x, gain, 1e-5),
        {"weight": gain},
    )
    rng = fs.rng("rmsnorm", "custom_eps")
    x, g = normal(rng, 2, 5, 16, std=0.2), norm_gain(rng, 16)
    fs.add(
        "rmsnorm",
        "eps_0.01",
        "eps = 0.01 (catches a hard-coded eps)",
        {"d_model": 16, "eps": 0.01},
        {"in_features": x},
        oracle.rmsnorm(x, g, 0.01),
        {"weight": g},
    )
    # 16 x 256 elements: half-precision arithmetic rounds four or five times per element and
    # exceeds the one-ulp tolerance somewhere with near certainty (20 of 20 random draws);
    # one or two roundings (float32 compute, then cast) never can.
    for dtype, std, why in (
        (torch.bfloat16, 4.0, "each half-precision step rounds; float32 compute rounds once"),
        (torch.float16, 300.0, "squares overflow float16 unless computed in float32"),
    ):
        name = str(dtype).removeprefix("torch.")
        rng = fs.rng("rmsnorm", name)
        x = in_dtype(normal(rng, 16, 256, std=std), dtype)
        # Gains representable in the input dtype, so a module built in that dtype loses nothing.
        g = in_dtype(norm_gain(rng, 256), dtype).float().numpy()
        fs.add(
            "rmsnorm",
            name,
            f"{name} input with values ~{std:g}: {why}",
            {"d_model": 256, "eps": 1e-5, "dtype": name},
            {"in_features": x},
            oracle.rmsnorm(x.double().numpy(), g, 1e-5),
            {"weight": g},
        )


def add_silu(fs: FixtureSet) -> None:
    rng = fs.rng("silu", "leading_dims")
    x = normal(rng, 2, 3, 17, std=3.0)
    fs.add(
        "silu",
        "leading_dims",
        "values ~N(0, 9) with two leading dims",
        {},
        {"in_features": x},
        oracle.silu(x),
    )
    # A grid with seeded jitter: the extremes stay covered, and fresh inputs change every value.
    rng = fs.rng("silu", "large_magnitude")
    x = (np.linspace(-90, 90, 37) + rng.uniform(-2, 2, 37)).astype(np.float32)
    fs.add(
        "silu",
        "large_magnitude",
        "values up to ±90, where a naive sigmoid overflows",
        {},
        {"in_features": x},
        oracle.silu(x),
    )


def add_softmax(fs: FixtureSet) -> None:
    rng = fs.rng("softmax", "base")
    x = normal(rng, 4, 10, std=2.0)
    fs.add(
        "softmax",
        "last_dim",
        "rows of a 4 x 10 matrix",
        {"dim": -1},
        {"in_features": x},
        oracle.softmax(x, -1),
    )
    shifted = x + np.float32(1000)
    fs.add(
        "softmax",
        "large_values",
        "the same rows + 1000: exp overflows without the max shift",
        {"dim": -1},
        {"in_features": shifted},
        oracle.softmax(shifted, -1),
    )
    huge = normal(rng, 3, 6, std=1e4)
    fs.add(
        "softmax",
        "huge_spread",
        "values ~1e4: one-hot rows, no NaN",
        {"dim": 1},
        {"in_features": huge},
        oracle.softmax(huge, 1),
    )
    x3 = normal(rng, 3, 5, 7)
    fs.add(
        "softmax",
        "dim_0",
        "over the first of three dims",
        {"dim": 0},
        {"in_features": x3},
        oracle.softmax(x3, 0),
    )
    fs.add(
        "softmax",
        "middle_dim_negative",
        "over dim=-2 of three dims",
        {"dim": -2},
        {"in_features": x3},
        oracle.softmax(x3, -2),
    )


def add_swiglu(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    rng = fs.rng("swiglu", "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64)
    ffn = _sub(model, "layers.0.ffn.")
    fs.add(
        "swiglu",
        "reference",
        "the reference model's first FFN (d_ff 128)",
        {"d_model": 64, "d_ff": 128} | _from_model("layers.0.ffn."),
        {"in_features": x},
        oracle.swiglu(x, ffn["w1.weight"], ffn["w2.weight"], ffn["w3.weight"]),
    )
    rng = fs.rng("swiglu", "small")
    x = normal(rng, 3, 5, 24)
    w = {
        "w1.weight": linear_weight(rng, 40, 24),
        "w2.weight": linear_weight(rng, 24, 40),
        "w3.weight": linear_weight(rng, 40, 24),
    }
    fs.add(
        "swiglu",
        "d_ff_40",
        "d_model 24, d_ff 40 (not a multiple of 64), w1 and w3 distinct",
        {"d_model": 24, "d_ff": 40},
        {"in_features": x},
        oracle.swiglu(x, w["w1.weight"], w["w2.weight"], w["w3.weight"]),
        w,
    )


def add_rope(fs: FixtureSet) -> None:
    specs = [
        (
            "reference",
            "positions 0..11, Θ = 10000, d_k 16",
            16,
            10000.0,
            16,
            (4, 12),
            lambda rng: np.arange(12),
        ),
        (
            "offset_positions",
            "positions 7..18: a slice later in a longer sequence",
            16,
            10000.0,
            32,
            (2, 12),
            lambda rng: np.arange(7, 19),
        ),
        (
            "arbitrary_positions",
            "unsorted positions with repeats",
            8,
            10000.0,
            64,
            (3, 10),
            lambda rng: rng.integers(0, 64, 10),
        ),
        (
            "batched_positions",
            "(batch, heads, seq, d_k) input, different positions per batch row",
            8,
            10000.0,
            32,
            (3, 2, 10),
            lambda rng: rng.integers(0, 32, (3, 1, 10)),
        ),
        (
            "theta_500000",
            "Θ = 500000 (LLaMA 3), d_k 32",
            32,
            500000.0,
            64,
            (2, 9),
            lambda rng: rng.integers(0, 64, (2, 9)),
        ),
        (
            "theta_100",
            "Θ = 100: every pair rotates fast, so a wrong pairing shows everywhere",
            12,
            100.0,
            16,
            (2, 16),
            lambda rng: np.arange(16),
        ),
    ]
    for case_id, description, d_k, theta, max_seq_len, lead, positions in specs:
        rng = fs.rng("rope", case_id)
        x = normal(rng, *lead, d_k)
        pos = np.asarray(positions(rng), dtype=np.int64)
        fs.add(
            "rope",
            case_id,
            description,
            {"d_k": d_k, "theta": theta, "max_seq_len": max_seq_len},
            {"in_query_or_key": x, "token_positions": pos},
            oracle.rope(x, pos, theta),
        )


def add_attention(fs: FixtureSet) -> None:
    def case(case_id, description, lead, n, m, d_k, d_v, mask_kind):
        rng = fs.rng("scaled_dot_product_attention", case_id)
        q, k = normal(rng, *lead, n, d_k, std=1.5), normal(rng, *lead, m, d_k, std=1.5)
        v = normal(rng, *lead, m, d_v)
        inputs = {"Q": q, "K": k, "V": v}
        mask = None
        if mask_kind == "random":
            mask = rng.random((*lead, n, m)) < 0.6
            mask[..., 0] = True
        elif mask_kind == "causal":
            mask = np.tril(np.ones((n, m), dtype=bool))
        elif mask_kind == "fully_masked_row":
            mask = rng.random((*lead, n, m)) < 0.6
            mask[..., 0] = True
            mask[..., 2, :] = False
        if mask is not None:
            inputs["mask"] = mask
        fs.add(
            "scaled_dot_product_attention",
            case_id,
            description,
            {"mask": mask is not None},
            inputs,
            oracle.scaled_dot_product_attention(q, k, v, mask),
            hardening=(
                "upstream leaves a query with no key to attend undefined"
                if mask_kind == "fully_masked_row"
                else None
            ),
        )

    case("3d_random_mask", "(batch, n, d) inputs with a random mask", (2,), 6, 6, 8, 8, "random")
    case("3d_no_mask", "mask=None attends everything", (3,), 5, 5, 16, 16, None)
    case(
        "4d_causal_mask",
        "(batch, heads, n, d) with one (n, n) causal mask broadcast",
        (2, 3),
        7,
        7,
        16,
        16,
        "causal",
    )
    case("4d_queries_ne_keys", "5 queries, 9 keys", (2, 2), 5, 9, 8, 8, "random")
    case(
        "4d_dv_ne_dk",
        "d_v = 12 with d_k = 8 (scale by sqrt(d_k), not d_v)",
        (2, 2),
        6,
        6,
        8,
        12,
        "random",
    )
    case(
        "4d_fully_masked_row",
        "query 2 may attend nothing: its output is 0, not NaN",
        (2, 2),
        5,
        7,
        8,
        8,
        "fully_masked_row",
    )


def _mha_weights(rng: np.random.Generator, d_model: int) -> dict[str, np.ndarray]:
    return {
        f"{p}.weight": linear_weight(rng, d_model, d_model, 2.0 if p[0] in "qk" else 1.0)
        for p in ("q_proj", "k_proj", "v_proj", "output_proj")
    }


def _mha_oracle(x, w, num_heads, theta=None, positions=None):
    return oracle.multihead_self_attention(
        x,
        w["q_proj.weight"],
        w["k_proj.weight"],
        w["v_proj.weight"],
        w["output_proj.weight"],
        num_heads,
        theta=theta,
        positions=positions,
    )


def add_mha(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    reference = _sub(model, "layers.0.attn.")
    rng = fs.rng("multihead_self_attention", "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64)
    fs.add(
        "multihead_self_attention",
        "reference",
        "the reference model's first attention layer",
        {"d_model": 64, "num_heads": 4} | _from_model("layers.0.attn."),
        {"in_features": x},
        _mha_oracle(x, reference, 4),
    )
    for case_id, description, d_model, heads, shape in [
        ("one_head", "a single head of width 16", 16, 1, (3, 6)),
        ("eight_heads_leading_dims", "8 heads of width 4, input (2, 3, 6, 32)", 32, 8, (2, 3, 6)),
    ]:
        rng = fs.rng("multihead_self_attention", case_id)
        w, x = _mha_weights(rng, d_model), normal(rng, *shape, d_model)
        fs.add(
            "multihead_self_attention",
            case_id,
            description,
            {"d_model": d_model, "num_heads": heads},
            {"in_features": x},
            _mha_oracle(x, w, heads),
            w,
        )

    family = "multihead_self_attention_with_rope"
    rng = fs.rng(family, "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64)
    positions = np.arange(REFERENCE_SEQ)
    fs.add(
        family,
        "reference",
        "the reference first layer with positions 0..11",
        {"d_model": 64, "num_heads": 4, "max_seq_len": 16, "theta": 10000.0}
        | _from_model("layers.0.attn."),
        {"in_features": x, "token_positions": positions},
        _mha_oracle(x, reference, 4, 10000.0, positions),
    )
    fs.add(
        family,
        "positions_omitted",
        "token_positions=None means 0..seq-1",
        {"d_model": 64, "num_heads": 4, "max_seq_len": 16, "theta": 10000.0}
        | _from_model("layers.0.attn."),
        {"in_features": x},
        _mha_oracle(x, reference, 4, 10000.0, positions),
        hardening="upstream always passes token_positions; None meaning 0..seq-1 is ours",
    )
    for case_id, description, d_model, heads, theta, max_seq, shape, make_positions in [
        (
            "offset_positions",
            "positions 20..29, Θ = 500000",
            32,
            2,
            500000.0,
            64,
            (2, 10),
            lambda rng: np.arange(20, 30),
        ),
        (
            "batched_positions",
            "a different position row per batch element",
            48,
            3,
            10000.0,
            32,
            (3, 8),
            lambda rng: np.sort(rng.integers(0, 32, (3, 8)), axis=-1),
        ),
    ]:
        rng = fs.rng(family, case_id)
        w, x = _mha_weights(rng, d_model), normal(rng, *shape, d_model)
        pos = np.asarray(make_positions(rng), dtype=np.int64)
        fs.add(
            family,
            case_id,
            description,
            {"d_model": d_model, "num_heads": heads, "max_seq_len": max_seq, "theta": theta},
            {"in_features": x, "token_positions": pos},
            _mha_oracle(x, w, heads, theta, pos),
            w,
        )


def _sublayer_tensors(trace: Sublayers, is_expected: str | None = None) -> dict[str, np.ndarray]:
    """The oracle's sublayer inputs and outputs as float32 case tensors,
    `trace.<sublayer>.input` and `.output`: a failing test compares the submission's with them
    to name the first sublayer that differs. The output of the sublayer `is_expected` is the
    case's `expected` (the LM's logits), stored once."""
    tensors = {}
    for name, (x, y) in trace.items():
        tensors[f"trace.{name}.input"] = x.astype(np.float32)
        if name != is_expected:
            tensors[f"trace.{name}.output"] = y.astype(np.float32)
    return tensors


def add_block(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    rng = fs.rng("transformer_block", "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64)
    w = _sub(model, "layers.0.")
    trace = transformer_block_sublayers(x, w, num_heads=4, config=REFERENCE_CONFIG)
    fs.add(
        "transformer_block",
        "reference",
        "the reference model's first block",
        {"d_model": 64, "num_heads": 4, "d_ff": 128, "max_seq_len": 16, "theta": 10000.0}
        | _from_model("layers.0."),
        {"in_features": x} | _sublayer_tensors(trace),
        oracle.transformer_block(x, w, num_heads=4, config=REFERENCE_CONFIG),
    )
    config = {"d_model": 48, "num_heads": 3, "d_ff": 96, "rope_theta": 500000.0}
    rng = fs.rng("transformer_block", "other_shape")
    w, x = block_weights(rng, config), normal(rng, 2, 20, 48)
    trace = transformer_block_sublayers(x, w, num_heads=3, config=config)
    fs.add(
        "transformer_block",
        "d_model_48_three_heads",
        "d_model 48, 3 heads, d_ff 96, Θ = 500000",
        {"d_model": 48, "num_heads": 3, "d_ff": 96, "max_seq_len": 32, "theta": 500000.0},
        {"in_features": x} | _sublayer_tensors(trace),
        oracle.transformer_block(x, w, num_heads=3, config=config),
        w,
    )


SMALL_CONFIGS = {
    "two_layers_vocab_257": {
        "vocab_size": 257,
        "context_length": 32,
        "d_model": 32,
        "num_layers": 2,
        "num_heads": 2,
        "d_ff": 64,
        "rope_theta": 500000.0,
    },
    "one_layer_one_head": {
        "vocab_size": 50,
        "context_length": 8,
        "d_model": 16,
        "num_layers": 1,
        "num_heads": 1,
        "d_ff": 48,
        "rope_theta": 10000.0,
    },
}


def add_lm(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    reference = REFERENCE_CONFIG | _from_model("")
    for family, seq, why in [
        ("transformer_lm", 16, "a full context of 16 tokens"),
        ("transformer_lm_truncated_input", 9, "9 tokens in a context of 16: nothing is padded"),
    ]:
        rng = fs.rng(family, "reference")
        ids = rng.integers(0, REFERENCE_CONFIG["vocab_size"], (REFERENCE_BATCH, seq))
        fs.add(
            family,
            "reference",
            f"the reference model on {why}",
            reference,
            {"in_indices": ids} | _lm_trace(family, ids, model, REFERENCE_CONFIG),
            oracle.transformer_lm(ids, model, REFERENCE_CONFIG),
        )
    for case_id, config in SMALL_CONFIGS.items():
        rng = fs.rng("transformer_lm", case_id)
        weights = lm_weights(rng, config)
        for family, seq in [
            ("transformer_lm", config["context_length"]),
            ("transformer_lm_truncated_input", config["context_length"] // 2 - 1),
        ]:
            ids = fs.rng(family, case_id, "ids").integers(0, config["vocab_size"], (2, seq))
            fs.add(
                family,
                case_id,
                f"{case_id.replace('_', ' ')}, {seq} tokens",
                config,
                {"in_indices": ids} | _lm_trace(family, ids, weights, config),
                oracle.transformer_lm(ids, weights, config),
                weights,
            )


def _lm_trace(family: str, ids: np.ndarray, weights: dict[str, np.ndarray], config: dict):
    """The sublayer trace of a `transformer_lm` case (the truncated-input family has none)."""
    if family != "transformer_lm":
        return {}
    return _sublayer_tensors(transformer_lm_sublayers(ids, weights, config), "lm_head")


def add_modules(fs: FixtureSet) -> None:
    """The LM and the block as modules, built untrained by `get_transformer_lm` and
    `get_transformer_block`: their parameter names and shapes, a strict load of the weights,
    and the LM's parameter gradients of `sum(projection * logits)`."""
    for case_id, config in SMALL_CONFIGS.items():
        rng = fs.rng("transformer_lm_module", case_id)
        weights = lm_weights(rng, config)
        ids = rng.integers(0, config["vocab_size"], (2, config["context_length"]))
        ids[1, -1] = ids[0, 0]  # a repeated id: its embedding row's gradient is a sum
        projection = normal(rng, *ids.shape, config["vocab_size"])
        grads = transformer_lm_backward(config, weights, ids, projection)
        fs.add(
            "transformer_lm_module",
            case_id,
            f"{case_id.replace('_', ' ')}: names, shapes, a strict load, gradients",
            config,
            {"in_indices": ids, "grad_projection": projection}
            | {f"expected_grad.{name}": g.astype(np.float32) for name, g in grads.items()},
            None,
            weights,
        )
    fs.add(
        "transformer_block_module",
        "reference",
        "the reference model's first block: names, shapes, a strict load",
        {"d_model": 64, "num_heads": 4, "d_ff": 128, "max_seq_len": 16, "theta": 10000.0}
        | _from_model("layers.0."),
        {},
        None,
    )


# Draws of the reference model tried before the generator gives up on a seed.
MAX_DRAWS = 100


def evidence_ids(fs: FixtureSet) -> np.ndarray:
    """The token ids the evidence is measured on."""
    return fs.rng("evidence").integers(0, REFERENCE_CONFIG["vocab_size"], (4, 16))


def draw_reference_model(fs: FixtureSet) -> dict[str, np.ndarray]:
    """The first draw that clears every evidence bar: the seed's own stream, then redraws
    named after their attempt, so the result is still a pure function of the seed."""
    missed: list[str] = []
    for attempt in range(MAX_DRAWS):
        names = ("reference_model",) if attempt == 0 else ("reference_model", f"redraw{attempt}")
        model = lm_weights(fs.rng(*names), REFERENCE_CONFIG)
        missed = evidence.shortfalls(model, REFERENCE_CONFIG, evidence_ids(fs))
        if not missed:
            fs.redraws = attempt
            return model
    raise RuntimeError(f"no draw in {MAX_DRAWS} clears the evidence bars (last: {missed[0]})")


def add_core(fs: FixtureSet) -> dict[str, np.ndarray]:
    """Add the reference model and every core family; return the reference weights."""
    model = draw_reference_model(fs)
    fs.add_shared("model_config.json", REFERENCE_CONFIG)
    fs.add_shared(MODEL_FILE, model)
    add_linear(fs, model)
    add_embedding(fs, model)
    add_rmsnorm(fs, model)
    add_silu(fs)
    add_softmax(fs)
    add_swiglu(fs, model)
    add_rope(fs)
    add_attention(fs)
    add_mha(fs, model)
    add_block(fs, model)
    add_lm(fs, model)
    add_modules(fs)
    return model
