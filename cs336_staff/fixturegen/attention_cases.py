"""Cases for RoPE, scaled dot-product attention and multi-head self-attention (with and
without RoPE), each case named for the class of mistakes it catches; a family's backward
cases (`backward_case`) follow its forward cases, and `add_attention_layers` adds them all."""

from __future__ import annotations

from typing import Any

import numpy as np

from cs336_staff import oracle
from cs336_staff.fixturegen.backward_case import adapter_names, add_backward_case, matrices
from cs336_staff.fixturegen.draws import normal
from cs336_staff.fixturegen.reference_model import (
    REFERENCE_BATCH,
    REFERENCE_SEQ,
    from_model,
    sub,
)
from cs336_staff.fixturegen.upstream_calls import upstream_passes
from cs336_staff.fixturegen.weights import QK_SCALE, linear_weight
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
            lambda rng: rng.integers(0, 64, 9),
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
            hardening=(
                upstream_passes("(batch, seq, d_k) inputs at (seq,) positions", "this one")
                if pos.ndim > 1
                else None
            ),
        )


def _attention_hardening(kind: str | None, mask: np.ndarray | None, scores: tuple) -> str | None:
    """Why an attention case is hardening: a row with no key, or a call upstream never makes
    (no mask, or one broadcast to the scores' shape)."""
    if kind == "fully_masked_row":
        return "upstream leaves a query with no key to attend undefined"
    if mask is None:
        return upstream_passes("a mask", "mask=None")
    if mask.shape != scores:
        return upstream_passes("a mask shaped like the scores", "one that broadcasts")
    return None


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
            hardening=_attention_hardening(mask_kind, mask, (*lead, n, m)),
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


# The attention projections, in the oracle's argument order.
MHA = ("q_proj", "k_proj", "v_proj", "output_proj")


def _mha_weights(rng: np.random.Generator, d_model: int) -> dict[str, np.ndarray]:
    return {
        f"{p}.weight": linear_weight(rng, d_model, d_model, QK_SCALE if p[0] in "qk" else 1.0)
        for p in MHA
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
            hardening=(
                upstream_passes("(batch, seq, d_model) inputs", "four axes")
                if len(shape) > 2
                else None
            ),
        )

    family = "multihead_self_attention_with_rope"
    rng = fs.rng(family, "reference")
    x = normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64)
    positions = np.arange(REFERENCE_SEQ)[None]  # (1, seq), as upstream's test shapes them
    fs.add(
        family,
        "reference",
        "the reference first layer with positions 0..11, shaped (1, 12)",
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
            "positions 20..29, shaped (1, 10), Θ = 500000",
            32,
            2,
            500000.0,
            64,
            (2, 10),
            lambda rng: np.arange(20, 30)[None],
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
            hardening=(
                upstream_passes("positions shaped (1, seq)", "a row per batch element")
                if pos.shape[0] > 1
                else None
            ),
        )


def add_rope_backward(fs: FixtureSet) -> None:
    """RoPE's backward case."""
    rng = fs.rng("rope", "backward")
    positions = rng.integers(0, 32, 10)  # (seq,), as upstream passes them
    theta = 10000.0

    def gradients(v, d):
        return {
            "in_query_or_key": oracle.rope_backward(v["in_query_or_key"], positions, theta, d)["x"]
        }

    add_backward_case(
        fs, "rope", "backward_arbitrary_positions",
        "(3, 10, 8) input at unsorted positions with repeats: the gradient rotates back",
        {"d_k": 8, "theta": theta, "max_seq_len": 32},
        {"in_query_or_key": normal(rng, 3, 10, 8)},
        lambda v: oracle.rope(v["in_query_or_key"], positions, theta),
        gradients,
        others={"token_positions": positions},
    )  # fmt: skip


def add_attention_backward(fs: FixtureSet) -> None:
    """Attention's backward case."""
    rng = fs.rng("scaled_dot_product_attention", "backward")
    lead, n, m, d_k, d_v = (2, 2), 5, 9, 8, 12
    mask = rng.random((*lead, n, m)) < 0.6
    mask[..., 0] = True
    differentiable = {
        "Q": normal(rng, *lead, n, d_k, std=1.5),
        "K": normal(rng, *lead, m, d_k, std=1.5),
        "V": normal(rng, *lead, m, d_v),
    }

    def gradients(v, d):
        g = oracle.scaled_dot_product_attention_backward(v["Q"], v["K"], v["V"], d, mask)
        return {"Q": g["q"], "K": g["k"], "V": g["v"]}

    add_backward_case(
        fs, "scaled_dot_product_attention", "backward_random_mask",
        "5 queries, 9 keys, d_v 12, a random mask: Q and K get gradient only through the "
        "probabilities",
        {"mask": True},
        differentiable,
        lambda v: oracle.scaled_dot_product_attention(v["Q"], v["K"], v["V"], mask),
        gradients,
        others={"mask": mask},
    )  # fmt: skip


def add_mha_backward(fs: FixtureSet) -> None:
    """Multi-head self-attention's backward cases, with and without RoPE."""
    for family, case_id, seq, with_rope in (
        ("multihead_self_attention", "backward_two_heads", 6, False),
        ("multihead_self_attention_with_rope", "backward_positions", 7, True),
    ):
        rng = fs.rng(family, "backward")
        w = _mha_weights(rng, 16)
        x = normal(rng, 2, seq, 16)
        params: dict[str, Any] = {"d_model": 16, "num_heads": 2}
        rope: dict[str, Any] = {}
        others = {}
        description = "d_model 16, 2 causal heads"
        if with_rope:
            # 0 … seq-1 shaped (1, seq), as upstream's tests pass them: the backward case is
            # scored, and positions of other values are a call upstream never makes (the
            # hardening cases' batched and offset positions check them).
            positions = np.arange(seq)[None, :]
            params |= {"theta": 10000.0, "max_seq_len": 32}
            rope = {"theta": 10000.0, "positions": positions}
            others = {"token_positions": positions}
            description += ", RoPE at positions 0 … seq-1 shaped (1, seq)"

        def forward(v, rope=rope):
            return oracle.multihead_self_attention(v["in_features"], *matrices(v, *MHA), 2, **rope)

        def gradients(v, d, rope=rope):
            return adapter_names(
                oracle.multihead_self_attention_backward(
                    v["in_features"], *matrices(v, *MHA), 2, d, **rope
                )
            )

        add_backward_case(
            fs, family, case_id, description, params, {"in_features": x}, forward, gradients,
            others=others, weights=w,
        )  # fmt: skip


def add_attention_layers(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    """Add every family of this module, each family's forward cases before its backward ones."""
    add_rope(fs)
    add_rope_backward(fs)
    add_attention(fs)
    add_attention_backward(fs)
    add_mha(fs, model)
    add_mha_backward(fs)
