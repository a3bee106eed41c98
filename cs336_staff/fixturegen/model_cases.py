"""Cases for the block and the language model, as functions and as modules, with the
sublayer traces that locate the first differing sublayer; the block's backward case
(`backward_case`) follows its forward cases, and `add_models` adds them all."""

from __future__ import annotations

import numpy as np

from cs336_staff import oracle
from cs336_staff.fixturegen.backward_case import adapter_names, add_backward_case
from cs336_staff.fixturegen.draws import normal
from cs336_staff.fixturegen.reference_model import (
    REFERENCE_BATCH,
    REFERENCE_CONFIG,
    REFERENCE_SEQ,
    from_model,
    sub,
)
from cs336_staff.fixturegen.weights import block_weights, lm_weights
from cs336_staff.fixturegen.writer import FixtureSet
from cs336_staff.oracle.model import (
    Sublayers,
    transformer_block_sublayers,
    transformer_lm_sublayers,
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
    w = sub(model, "layers.0.")
    trace = transformer_block_sublayers(x, w, num_heads=4, config=REFERENCE_CONFIG)
    fs.add(
        "transformer_block",
        "reference",
        "the reference model's first block",
        {"d_model": 64, "num_heads": 4, "d_ff": 128, "max_seq_len": 16, "theta": 10000.0}
        | from_model("layers.0."),
        {"in_features": x} | _sublayer_tensors(trace),
        oracle.transformer_block(x, w, num_heads=4, config=REFERENCE_CONFIG),
    )
    rng = fs.rng("transformer_block", "small_input")
    x = SMALL_INPUT * normal(rng, REFERENCE_BATCH, REFERENCE_SEQ, 64)
    trace = transformer_block_sublayers(x, w, num_heads=4, config=REFERENCE_CONFIG)
    fs.add(
        "transformer_block",
        "small_input",
        f"the reference model's first block on inputs of scale {SMALL_INPUT}: ln1's mean square "
        "is about 1e-4, where its eps counts (1e-6 in place of 1e-5 moves its output by 5%)",
        {"d_model": 64, "num_heads": 4, "d_ff": 128, "max_seq_len": 16, "theta": 10000.0}
        | from_model("layers.0."),
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


# Inputs this small make a norm's eps count: their mean square, about 1e-4, is within ten
# times the contract's eps, 1e-5.
SMALL_INPUT = 0.01
# Deep enough that an order of the layers other than the index's shows: as strings, layers.10
# sorts before layers.2; its token embeddings are small (SMALL_INPUT), so that the first
# norm's eps counts too.
DEEP_CONFIG = {
    "vocab_size": 64,
    "context_length": 8,
    "d_model": 16,
    "num_layers": 12,
    "num_heads": 2,
    "d_ff": 32,
    "rope_theta": 10000.0,
}
DEEP = "twelve_layers_small_embeddings"
DEEP_SCALES = {
    "token_embeddings.weight": SMALL_INPUT,
    "q_proj.weight": 0.5,
    "k_proj.weight": 0.5,
}


def add_lm(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    reference = REFERENCE_CONFIG | from_model("")
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
    rng = fs.rng("transformer_lm", DEEP)
    weights = lm_weights(rng, DEEP_CONFIG)
    for name, factor in DEEP_SCALES.items():
        for key in [k for k in weights if k.endswith(name)]:
            weights[key] = (factor * weights[key]).astype(np.float32)
    for family, seq in [
        ("transformer_lm", DEEP_CONFIG["context_length"]),
        ("transformer_lm_truncated_input", DEEP_CONFIG["context_length"] // 2 - 1),
    ]:
        ids = fs.rng(family, DEEP, "ids").integers(0, DEEP_CONFIG["vocab_size"], (2, seq))
        fs.add(
            family,
            DEEP,
            f"12 layers, which run in index order (as strings, layers.10 sorts before "
            f"layers.2), and token embeddings of scale {SMALL_INPUT}, where the first norm's "
            f"eps counts; {seq} tokens",
            DEEP_CONFIG,
            {"in_indices": ids} | _lm_trace(family, ids, weights, DEEP_CONFIG),
            oracle.transformer_lm(ids, weights, DEEP_CONFIG),
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
        grads = oracle.transformer_lm_backward(config, weights, ids, projection)
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
        | from_model("layers.0."),
        {},
        None,
    )


def add_block_backward(fs: FixtureSet) -> None:
    """The block's backward case."""
    config = {"d_model": 16, "num_heads": 2, "d_ff": 32, "rope_theta": 10000.0}
    rng = fs.rng("transformer_block", "backward")
    w = block_weights(rng, config)

    def weights(v):
        return {name: v[name] for name in w}

    add_backward_case(
        fs, "transformer_block", "backward_small",
        "d_model 16, 2 heads, d_ff 32: through both residual branches and both norms",
        {"d_model": 16, "num_heads": 2, "d_ff": 32, "max_seq_len": 16, "theta": 10000.0},
        {"in_features": normal(rng, 2, 6, 16)},
        lambda v: oracle.transformer_block(
            v["in_features"], weights(v), num_heads=2, config=config
        ),
        lambda v, d: adapter_names(
            oracle.transformer_block_backward(
                v["in_features"], weights(v), d, num_heads=2, config=config
            )
        ),
        weights=w,
    )  # fmt: skip


def add_models(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    """Add every family of this module, each family's forward cases before its backward ones."""
    add_block(fs, model)
    add_block_backward(fs)
    add_lm(fs, model)
    add_modules(fs)
