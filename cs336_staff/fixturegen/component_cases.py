"""Cases for the components of the default (LLaMA-style) architecture: Linear, Embedding,
RMSNorm, SiLU, softmax and SwiGLU.

Each case exists to catch a class of mistakes, which its description names. Inputs are
O(1) unless a case is about magnitude, so that absolute and relative tolerances mean the
same thing across families. A family's backward cases (`backward_case`) follow its forward
cases, and `add_components` adds every family of the module.
"""

from __future__ import annotations

import numpy as np
import torch

from cs336_staff import oracle
from cs336_staff.fixturegen.backward_case import adapter_names, add_backward_case, matrices
from cs336_staff.fixturegen.draws import in_dtype, normal
from cs336_staff.fixturegen.reference_model import (
    REFERENCE_BATCH,
    REFERENCE_CONFIG,
    REFERENCE_SEQ,
    from_model,
    sub,
)
from cs336_staff.fixturegen.upstream_calls import upstream_passes
from cs336_staff.fixturegen.weights import linear_weight, norm_gain
from cs336_staff.fixturegen.writer import FixtureSet


def add_linear(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    rng = fs.rng("linear", "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64)
    w = model["layers.0.ffn.w1.weight"]
    fs.add(
        "linear",
        "reference_ffn_w1",
        "the reference model's w1 (64 -> 128) on a batch of sequences",
        {"d_in": 64, "d_out": 128} | from_model("layers.0.ffn.w1."),
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
        hardening=upstream_passes("(batch, seq, d_in) inputs", "four axes"),
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
        hardening=upstream_passes("(batch, seq, d_in) inputs", "a 1-D one"),
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
        {"vocab_size": vocab, "d_model": 64} | from_model("token_embeddings."),
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
        hardening=upstream_passes("(batch, seq) ids", "three axes"),
    )


def add_rmsnorm(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    gain = model["layers.0.ln1.weight"]
    rng = fs.rng("rmsnorm", "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64, std=2.0)
    fs.add(
        "rmsnorm",
        "reference_ln1",
        "the reference model's first norm gain (not all ones)",
        {"d_model": 64, "eps": 1e-5} | from_model("layers.0.ln1."),
        {"in_features": x},
        oracle.rmsnorm(x, gain, 1e-5),
    )
    rng = fs.rng("rmsnorm", "small_magnitude")
    x = normal(rng, 1, 3, 64, std=1e-3)  # (batch, seq, d_model), as upstream's inputs are
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
            hardening=upstream_passes("float32 inputs", f"a {name} one"),
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
        trivial="each row is one-hot: a one-hot at the arg-max gives it",
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
    ffn = sub(model, "layers.0.ffn.")
    fs.add(
        "swiglu",
        "reference",
        "the reference model's first FFN (d_ff 128)",
        {"d_model": 64, "d_ff": 128} | from_model("layers.0.ffn."),
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


def add_linear_backward(fs: FixtureSet) -> None:
    """Linear's backward case."""
    rng = fs.rng("linear", "backward")
    w = linear_weight(rng, 5, 7)
    add_backward_case(
        fs, "linear", "backward_leading_dims",
        "d(in_features) = d(out) W: (2, 3, 7) -> 5, a non-square W",
        {"d_in": 7, "d_out": 5},
        {"in_features": normal(rng, 2, 3, 7)},
        lambda v: oracle.linear(v["in_features"], v["weight"]),
        lambda v, d: adapter_names(oracle.linear_backward(v["in_features"], v["weight"], d)),
        weights={"weight": w},
    )  # fmt: skip


def add_embedding_backward(fs: FixtureSet) -> None:
    """Embedding's backward case: the table's gradient."""
    rng = fs.rng("embedding", "backward")
    ids = rng.integers(0, 12, (3, 7))  # 21 ids in 12 rows: some row is looked up twice
    add_backward_case(
        fs, "embedding", "backward_repeated_ids",
        "ids (3, 7) into a 12 x 8 table: a row looked up more than once sums the gradients "
        "of its uses, a row never looked up gets zero",
        {"vocab_size": 12, "d_model": 8},
        {},
        lambda v: oracle.embedding(v["weight"], ids),
        lambda v, d: oracle.embedding_backward(v["weight"], ids, d),
        others={"token_ids": ids},
        weights={"weight": normal(rng, 12, 8)},
    )  # fmt: skip


def add_rmsnorm_backward(fs: FixtureSet) -> None:
    """RMSNorm's backward case."""
    rng = fs.rng("rmsnorm", "backward")
    gain, eps = norm_gain(rng, 16), 1e-5
    add_backward_case(
        fs, "rmsnorm", "backward_gain",
        "d_model 16: the normaliser's own dependence on x is about a quarter of the gradient",
        {"d_model": 16, "eps": eps},
        {"in_features": normal(rng, 3, 5, 16, std=2.0)},
        lambda v: oracle.rmsnorm(v["in_features"], v["weight"], eps),
        lambda v, d: adapter_names(oracle.rmsnorm_backward(v["in_features"], v["weight"], d, eps)),
        weights={"weight": gain},
    )  # fmt: skip


def add_silu_backward(fs: FixtureSet) -> None:
    """SiLU's backward case."""
    rng = fs.rng("silu", "backward")
    add_backward_case(
        fs, "silu", "backward_leading_dims",
        "values ~N(0, 9): sigmoid(x) (1 + x (1 - sigmoid(x)))",
        {},
        {"in_features": normal(rng, 2, 3, 17, std=3.0)},
        lambda v: oracle.silu(v["in_features"]),
        lambda v, d: {"in_features": oracle.silu_backward(v["in_features"], d)["x"]},
    )  # fmt: skip


def add_softmax_backward(fs: FixtureSet) -> None:
    """Softmax's backward cases, over the last and a middle dim."""
    for case_id, description, shape, dim in (
        ("backward_last_dim", "rows of a 4 x 10 matrix", (4, 10), -1),
        ("backward_middle_dim", "dim 1 of three", (3, 5, 7), 1),
    ):
        rng = fs.rng("softmax", case_id)
        add_backward_case(
            fs, "softmax", case_id,
            f"p (d - sum(p d)) over {description}",
            {"dim": dim},
            {"in_features": normal(rng, *shape, std=2.0)},
            lambda v, dim=dim: oracle.softmax(v["in_features"], dim),
            lambda v, d, dim=dim: {
                "in_features": oracle.softmax_backward(v["in_features"], dim, d)["x"]
            },
        )  # fmt: skip


def add_swiglu_backward(fs: FixtureSet) -> None:
    """SwiGLU's backward case."""
    rng = fs.rng("swiglu", "backward")
    w1, w2, w3 = linear_weight(rng, 40, 24), linear_weight(rng, 24, 40), linear_weight(rng, 40, 24)
    add_backward_case(
        fs, "swiglu", "backward_d_ff_40",
        "d_model 24, d_ff 40: gradient through both the gate and the value",
        {"d_model": 24, "d_ff": 40},
        {"in_features": normal(rng, 3, 5, 24)},
        lambda v: oracle.swiglu(v["in_features"], *matrices(v, "w1", "w2", "w3")),
        lambda v, d: adapter_names(
            oracle.swiglu_backward(v["in_features"], *matrices(v, "w1", "w2", "w3"), d)
        ),
        weights={"w1.weight": w1, "w2.weight": w2, "w3.weight": w3},
    )  # fmt: skip


def add_components(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    """Add every family of this module, each family's forward cases before its backward ones."""
    add_linear(fs, model)
    add_linear_backward(fs)
    add_embedding(fs, model)
    add_embedding_backward(fs)
    add_rmsnorm(fs, model)
    add_rmsnorm_backward(fs)
    add_silu(fs)
    add_silu_backward(fs)
    add_softmax(fs)
    add_softmax_backward(fs)
    add_swiglu(fs, model)
    add_swiglu_backward(fs)
