"""Backward cases: for each differentiable family, the gradients its inputs must receive.

A case stores the forward's arguments, a fixed random `grad_projection` shaped like the
output, and `expected_grad.<name>`: the oracle's gradient of
``sum(grad_projection * output)`` with respect to the float argument or the weight of that
name (weights by their SPEC names, `weight`, `w1.weight`, `attn.q_proj.weight`). Its params carry
``"backward": true``, so only the family's `test_<family>_backward` runs on it (the plugin's
``cases="backward"``). The cases are small: their point is that an implementation which
detaches, uses ``.data``, computes under ``no_grad`` or goes through NumPy has an output that
no gradient flows back through, or flows back wrong, and any size shows that.

The weights' gradients are those of the parameters an adapter builds around them (it may
copy them into a module with ``load_state_dict``, or use them as they are): a Linear that
computes with ``weight.data``, or a norm with a detached gain, gives the right output and
the right input gradient, and no gradient to its weight. Before a gradient is stored,
`check_gradients` compares it with a central difference of the forward oracle along a
random direction, and the generation stops if they disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cs336_staff import oracle
from cs336_staff.fixturegen.draws import normal
from cs336_staff.fixturegen.weights import QK_SCALE, block_weights, linear_weight, norm_gain
from cs336_staff.fixturegen.writer import FixtureSet
from cs336_staff.oracle import backward

Forward = Callable[[Mapping[str, np.ndarray]], np.ndarray]
Backward = Callable[[Mapping[str, np.ndarray], np.ndarray], dict[str, np.ndarray]]


def _add(
    fs: FixtureSet,
    family: str,
    case_id: str,
    description: str,
    params: dict[str, Any],
    differentiable: dict[str, np.ndarray],
    forward: Forward,
    gradients: Backward,
    others: dict[str, np.ndarray] | None = None,
    weights: dict[str, np.ndarray] | None = None,
) -> None:
    """Draw the projection, compute and verify the gradients of `differentiable` (the
    arguments by their adapter names) and of `weights` (by their SPEC names), and store the
    case.

    `forward(values)` and `gradients(values, d_out)` see the differentiable arguments and
    the weights by name; everything else they need (positions, masks) they hold themselves.
    """
    values = differentiable | (weights or {})
    output = forward(values)
    projection = normal(fs.rng(family, case_id, "projection"), *output.shape)
    grads = gradients(values, projection.astype(np.float64))
    if set(grads) != set(values):
        raise ValueError(f"{family}/{case_id}: gradients of {sorted(grads)}, not {sorted(values)}")
    try:
        backward.check_gradients(
            forward, values, grads, projection, fs.rng(family, case_id, "check")
        )
    except backward.GradientCheckError as error:
        raise backward.GradientCheckError(f"{family}/{case_id}: {error}") from None
    fs.add(
        family,
        case_id,
        description,
        params | {"backward": True},
        differentiable
        | (others or {})
        | {"grad_projection": projection}
        | {f"expected_grad.{name}": g.astype(np.float32) for name, g in grads.items()},
        None,
        weights,
    )


def _renamed(grads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """An oracle backward's gradients as `_add` names them: its input `x` as the adapters'
    `in_features`, its parameters under their SPEC names, as they are."""
    return {("in_features" if name == "x" else name): g for name, g in grads.items()}


def _matrices(values: Mapping[str, np.ndarray], *names: str) -> list[np.ndarray]:
    """The weight matrices `<name>.weight`, in the order named."""
    return [values[f"{name}.weight"] for name in names]


# The attention projections, in the oracle's argument order.
MHA = ("q_proj", "k_proj", "v_proj", "output_proj")


def _add_linear(fs: FixtureSet) -> None:
    rng = fs.rng("linear", "backward")
    w = linear_weight(rng, 5, 7)
    _add(
        fs, "linear", "backward_leading_dims",
        "d(in_features) = d(out) W: (2, 3, 7) -> 5, a non-square W",
        {"d_in": 7, "d_out": 5},
        {"in_features": normal(rng, 2, 3, 7)},
        lambda v: oracle.linear(v["in_features"], v["weight"]),
        lambda v, d: _renamed(backward.linear_backward(v["in_features"], v["weight"], d)),
        weights={"weight": w},
    )  # fmt: skip


def _add_embedding(fs: FixtureSet) -> None:
    rng = fs.rng("embedding", "backward")
    ids = rng.integers(0, 12, (3, 7))  # 21 ids in 12 rows: some row is looked up twice
    _add(
        fs, "embedding", "backward_repeated_ids",
        "ids (3, 7) into a 12 x 8 table: a row looked up more than once sums the gradients "
        "of its uses, a row never looked up gets zero",
        {"vocab_size": 12, "d_model": 8},
        {},
        lambda v: oracle.embedding(v["weight"], ids),
        lambda v, d: backward.embedding_backward(v["weight"], ids, d),
        others={"token_ids": ids},
        weights={"weight": normal(rng, 12, 8)},
    )  # fmt: skip


def _add_rmsnorm(fs: FixtureSet) -> None:
    rng = fs.rng("rmsnorm", "backward")
    gain, eps = norm_gain(rng, 16), 1e-5
    _add(
        fs, "rmsnorm", "backward_gain",
        "d_model 16: the normaliser's own dependence on x is about a quarter of the gradient",
        {"d_model": 16, "eps": eps},
        {"in_features": normal(rng, 3, 5, 16, std=2.0)},
        lambda v: oracle.rmsnorm(v["in_features"], v["weight"], eps),
        lambda v, d: _renamed(backward.rmsnorm_backward(v["in_features"], v["weight"], d, eps)),
        weights={"weight": gain},
    )  # fmt: skip


def _add_layernorm(fs: FixtureSet) -> None:
    rng = fs.rng("layernorm", "backward")
    gain, shift, eps = norm_gain(rng, 16), normal(rng, 16, std=0.1), 1e-5
    x = normal(rng, 3, 5, 16, std=2.0) + rng.uniform(-3, 3, (3, 5, 1)).astype(np.float32)
    _add(
        fs, "layernorm", "backward_row_offsets",
        "d_model 16, rows off centre: both the mean and the variance pass gradient back",
        {"d_model": 16, "eps": eps},
        {"in_features": x},
        lambda v: oracle.layernorm(v["in_features"], v["weight"], v["bias"], eps),
        lambda v, d: _renamed(
            backward.layernorm_backward(v["in_features"], v["weight"], v["bias"], d, eps)
        ),
        weights={"weight": gain, "bias": shift},
    )  # fmt: skip


def _add_elementwise(fs: FixtureSet) -> None:
    rng = fs.rng("silu", "backward")
    _add(
        fs, "silu", "backward_leading_dims",
        "values ~N(0, 9): sigmoid(x) (1 + x (1 - sigmoid(x)))",
        {},
        {"in_features": normal(rng, 2, 3, 17, std=3.0)},
        lambda v: oracle.silu(v["in_features"]),
        lambda v, d: {"in_features": backward.silu_backward(v["in_features"], d)["x"]},
    )  # fmt: skip
    for approximate, form in (("none", "exact"), ("tanh", "tanh")):
        rng = fs.rng("gelu", "backward", form)
        _add(
            fs, "gelu", f"backward_{form}",
            f"{form} GELU's derivative on values ~N(0, 4)",
            {"approximate": approximate},
            {"in_features": normal(rng, 2, 3, 17, std=2.0)},
            lambda v, a=approximate: oracle.gelu(v["in_features"], a),
            lambda v, d, a=approximate: {
                "in_features": backward.gelu_backward(v["in_features"], d, a)["x"]
            },
        )  # fmt: skip
    for case_id, description, shape, dim in (
        ("backward_last_dim", "rows of a 4 x 10 matrix", (4, 10), -1),
        ("backward_middle_dim", "dim 1 of three", (3, 5, 7), 1),
    ):
        rng = fs.rng("softmax", case_id)
        _add(
            fs, "softmax", case_id,
            f"p (d - sum(p d)) over {description}",
            {"dim": dim},
            {"in_features": normal(rng, *shape, std=2.0)},
            lambda v, dim=dim: oracle.softmax(v["in_features"], dim),
            lambda v, d, dim=dim: {
                "in_features": backward.softmax_backward(v["in_features"], dim, d)["x"]
            },
        )  # fmt: skip


def _add_cross_entropy(fs: FixtureSet) -> None:
    rng = fs.rng("cross_entropy", "backward")
    targets = rng.integers(0, 20, (3, 4))
    _add(
        fs, "cross_entropy", "backward_leading_dims",
        "(softmax - one_hot) / 12 over logits (3, 4, 20), times a scalar projection",
        {},
        {"inputs": normal(rng, 3, 4, 20, std=2.0)},
        lambda v: np.asarray(oracle.cross_entropy(v["inputs"], targets)),
        lambda v, d: {
            "inputs": backward.cross_entropy_backward(v["inputs"], targets, float(d))["logits"]
        },
        others={"targets": targets},
    )  # fmt: skip


def _add_feedforward(fs: FixtureSet) -> None:
    rng = fs.rng("swiglu", "backward")
    w1, w2, w3 = linear_weight(rng, 40, 24), linear_weight(rng, 24, 40), linear_weight(rng, 40, 24)
    _add(
        fs, "swiglu", "backward_d_ff_40",
        "d_model 24, d_ff 40: gradient through both the gate and the value",
        {"d_model": 24, "d_ff": 40},
        {"in_features": normal(rng, 3, 5, 24)},
        lambda v: oracle.swiglu(v["in_features"], *_matrices(v, "w1", "w2", "w3")),
        lambda v, d: _renamed(
            backward.swiglu_backward(v["in_features"], *_matrices(v, "w1", "w2", "w3"), d)
        ),
        weights={"w1.weight": w1, "w2.weight": w2, "w3.weight": w3},
    )  # fmt: skip
    rng = fs.rng("positionwise_feedforward", "backward")
    w1, w2 = linear_weight(rng, 24, 16), linear_weight(rng, 16, 24)
    _add(
        fs, "positionwise_feedforward", "backward_d_ff_24",
        "d_model 16, d_ff 24, exact GELU, inputs ~N(0, 4)",
        {"d_model": 16, "d_ff": 24},
        {"in_features": normal(rng, 2, 5, 16, std=2.0)},
        lambda v: oracle.feedforward(v["in_features"], *_matrices(v, "w1", "w2")),
        lambda v, d: _renamed(
            backward.feedforward_backward(v["in_features"], *_matrices(v, "w1", "w2"), d)
        ),
        weights={"w1.weight": w1, "w2.weight": w2},
    )  # fmt: skip


def _add_rope(fs: FixtureSet) -> None:
    rng = fs.rng("rope", "backward")
    positions = rng.integers(0, 32, (3, 1, 10))
    theta = 10000.0

    def gradients(v, d):
        return {
            "in_query_or_key": backward.rope_backward(v["in_query_or_key"], positions, theta, d)[
                "x"
            ]
        }

    _add(
        fs, "rope", "backward_batched_positions",
        "(3, 2, 10, 8) input, positions per batch row: the gradient rotates back",
        {"d_k": 8, "theta": theta, "max_seq_len": 32},
        {"in_query_or_key": normal(rng, 3, 2, 10, 8)},
        lambda v: oracle.rope(v["in_query_or_key"], positions, theta),
        gradients,
        others={"token_positions": positions},
    )  # fmt: skip


def _add_attention(fs: FixtureSet) -> None:
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
        g = backward.scaled_dot_product_attention_backward(v["Q"], v["K"], v["V"], d, mask)
        return {"Q": g["q"], "K": g["k"], "V": g["v"]}

    _add(
        fs, "scaled_dot_product_attention", "backward_random_mask",
        "5 queries, 9 keys, d_v 12, a random mask: Q and K get gradient only through the "
        "probabilities",
        {"mask": True},
        differentiable,
        lambda v: oracle.scaled_dot_product_attention(v["Q"], v["K"], v["V"], mask),
        gradients,
        others={"mask": mask},
    )  # fmt: skip


def _projections(rng: np.random.Generator, d_model: int) -> dict[str, np.ndarray]:
    return {
        f"{p}.weight": linear_weight(rng, d_model, d_model, QK_SCALE if p[0] in "qk" else 1.0)
        for p in MHA
    }


def _add_mha(fs: FixtureSet) -> None:
    for family, case_id, seq, with_rope in (
        ("multihead_self_attention", "backward_two_heads", 6, False),
        ("multihead_self_attention_with_rope", "backward_batched_positions", 7, True),
    ):
        rng = fs.rng(family, "backward")
        w = _projections(rng, 16)
        x = normal(rng, 2, seq, 16)
        params: dict[str, Any] = {"d_model": 16, "num_heads": 2}
        rope: dict[str, Any] = {}
        others = {}
        description = "d_model 16, 2 causal heads"
        if with_rope:
            positions = np.sort(rng.integers(0, 32, (2, seq)), axis=-1)
            params |= {"theta": 10000.0, "max_seq_len": 32}
            rope = {"theta": 10000.0, "positions": positions}
            others = {"token_positions": positions}
            description += ", RoPE at positions per batch row"

        def forward(v, rope=rope):
            return oracle.multihead_self_attention(v["in_features"], *_matrices(v, *MHA), 2, **rope)

        def gradients(v, d, rope=rope):
            return _renamed(
                backward.multihead_self_attention_backward(
                    v["in_features"], *_matrices(v, *MHA), 2, d, **rope
                )
            )

        _add(fs, family, case_id, description, params, {"in_features": x}, forward, gradients,
             others=others, weights=w)  # fmt: skip


def _add_block(fs: FixtureSet) -> None:
    config = {"d_model": 16, "num_heads": 2, "d_ff": 32, "rope_theta": 10000.0}
    rng = fs.rng("transformer_block", "backward")
    w = block_weights(rng, config)

    def weights(v):
        return {name: v[name] for name in w}

    _add(
        fs, "transformer_block", "backward_small",
        "d_model 16, 2 heads, d_ff 32: through both residual branches and both norms",
        {"d_model": 16, "num_heads": 2, "d_ff": 32, "max_seq_len": 16, "theta": 10000.0},
        {"in_features": normal(rng, 2, 6, 16)},
        lambda v: oracle.transformer_block(
            v["in_features"], weights(v), num_heads=2, config=config
        ),
        lambda v, d: _renamed(
            backward.transformer_block_backward(
                v["in_features"], weights(v), d, num_heads=2, config=config
            )
        ),
        weights=w,
    )  # fmt: skip


def add_gradients(fs: FixtureSet) -> None:
    """Add one or two backward cases to every family whose adapter takes a float input or
    weights."""
    _add_linear(fs)
    _add_embedding(fs)
    _add_rmsnorm(fs)
    _add_layernorm(fs)
    _add_elementwise(fs)
    _add_cross_entropy(fs)
    _add_feedforward(fs)
    _add_rope(fs)
    _add_attention(fs)
    _add_mha(fs)
    _add_block(fs)
