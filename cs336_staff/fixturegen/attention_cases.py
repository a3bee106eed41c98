"""Cases for RoPE, scaled dot-product attention and multi-head self-attention (with and
without RoPE), each case named for the class of mistakes it catches."""

from __future__ import annotations

import numpy as np

from cs336_staff import oracle
from cs336_staff.fixturegen.draws import normal
from cs336_staff.fixturegen.reference_model import (
    REFERENCE_BATCH,
    REFERENCE_SEQ,
    from_model,
    sub,
)
from cs336_staff.fixturegen.weights import linear_weight
from cs336_staff.fixturegen.writer import FixtureSet


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
    reference = sub(model, "layers.0.attn.")
    rng = fs.rng("multihead_self_attention", "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64)
    fs.add(
        "multihead_self_attention",
        "reference",
        "the reference model's first attention layer",
        {"d_model": 64, "num_heads": 4} | from_model("layers.0.attn."),
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
        | from_model("layers.0.attn."),
        {"in_features": x, "token_positions": positions},
        _mha_oracle(x, reference, 4, 10000.0, positions),
    )
    fs.add(
        family,
        "positions_omitted",
        "token_positions=None means 0..seq-1",
        {"d_model": 64, "num_heads": 4, "max_seq_len": 16, "theta": 10000.0}
        | from_model("layers.0.attn."),
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
