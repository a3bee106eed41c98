"""Cases for the architecture variants of the SPEC: LayerNorm, GELU, the two-matrix FFN, and
the language model under every config option (`transformer_lm_from_config`).

Every LM case has its own weights, drawn for its own configuration by `lm_weights` (norm
gains away from 1, LayerNorm shifts and biases nonzero, an independent head unless tied), so
an implementation that ignores an option computes a different function on them. Case ids
name the variant, so `pytest -k post_norm` (or `nope`, `gpt2`, `layernorm`, ...) selects it.

A family's backward cases (`backward_case`) follow its forward cases, and `add_variants`
adds every family of the module.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from cs336_staff import oracle
from cs336_staff.fixturegen.backward_case import adapter_names, add_backward_case, matrices
from cs336_staff.fixturegen.draws import in_dtype, normal
from cs336_staff.fixturegen.weights import bias, linear_weight, lm_weights, norm_gain
from cs336_staff.fixturegen.writer import FixtureSet


def _layernorm_params(rng: np.random.Generator, d_model: int) -> dict[str, np.ndarray]:
    return {"weight": norm_gain(rng, d_model), "bias": bias(rng, d_model)}


def _float64(x: np.ndarray | torch.Tensor) -> np.ndarray:
    return x.double().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, np.float64)


def add_layernorm(fs: FixtureSet) -> None:
    def case(case_id, description, x, d_model, eps, params, extra=None):
        fs.add(
            "layernorm",
            case_id,
            description,
            {"d_model": d_model, "eps": eps} | (extra or {}),
            {"in_features": x},
            oracle.layernorm(_float64(x), params["weight"], params["bias"], eps),
            params,
        )

    rng = fs.rng("layernorm", "row_offsets")
    # Each row shifted by its own offset: skipping the mean subtraction (an RMSNorm) is O(1) off.
    x = normal(rng, 4, 12, 64, std=2.0) + rng.uniform(-3, 3, (4, 12, 1)).astype(np.float32)
    case(
        "row_offsets",
        "rows with means far from 0 (catches a missing mean subtraction)",
        x,
        64,
        1e-5,
        _layernorm_params(rng, 64),
    )
    rng = fs.rng("layernorm", "leading_dims")
    case(
        "leading_dims",
        "three leading dims, d_model 16 (biased vs unbiased variance differ by 16/15)",
        normal(rng, 2, 3, 5, 16),
        16,
        1e-5,
        _layernorm_params(rng, 16),
    )
    rng = fs.rng("layernorm", "small_magnitude")
    case(
        "small_magnitude",
        "std 1e-3, where eps inside vs outside the sqrt differs",
        normal(rng, 3, 64, std=1e-3),
        64,
        1e-5,
        _layernorm_params(rng, 64),
    )
    rng = fs.rng("layernorm", "custom_eps")
    case(
        "eps_0.01",
        "eps = 0.01 (catches a hard-coded eps)",
        normal(rng, 2, 5, 16, std=0.2),
        16,
        0.01,
        _layernorm_params(rng, 16),
    )
    # As for RMSNorm: 16 x 256 elements, so that computing in half precision (several
    # roundings per element) misses the one-ulp tolerance somewhere, and float16 squares of
    # values ~300 overflow; computing in float32 and casting once never misses.
    for dtype, std, why in (
        (torch.bfloat16, 4.0, "each half-precision step rounds; float32 compute rounds once"),
        (torch.float16, 300.0, "squared deviations overflow float16 unless computed in float32"),
    ):
        name = str(dtype).removeprefix("torch.")
        rng = fs.rng("layernorm", name)
        x = in_dtype(normal(rng, 16, 256, std=std), dtype)
        # Gain and shift representable in the input dtype, so a module in that dtype loses nothing.
        params = {
            k: in_dtype(v, dtype).float().numpy() for k, v in _layernorm_params(rng, 256).items()
        }
        case(
            name, f"{name} input with values ~{std:g}: {why}", x, 256, 1e-5, params, {"dtype": name}
        )


def add_gelu(fs: FixtureSet) -> None:
    inputs = {
        "leading_dims": (
            "values ~N(0, 9) with two leading dims",
            lambda rng: normal(rng, 2, 3, 17, std=3.0),
        ),
        "dense_core": (
            "a dense grid over [-4, 4], where exact and tanh GELU differ by up to 5e-4",
            lambda rng: (np.linspace(-4, 4, 161) + rng.uniform(-0.02, 0.02, 161)).astype(
                np.float32
            ),
        ),
        "large_magnitude": (
            "values up to ±90: no overflow in x³ or exp, gelu(-90) = 0",
            lambda rng: (np.linspace(-90, 90, 37) + rng.uniform(-2, 2, 37)).astype(np.float32),
        ),
    }
    for approximate, form in (("none", "exact"), ("tanh", "tanh")):
        for name, (description, make) in inputs.items():
            case_id = f"{form}_{name}"
            x = make(fs.rng("gelu", case_id))
            fs.add(
                "gelu",
                case_id,
                f"{form} GELU: {description}",
                {"approximate": approximate},
                {"in_features": x},
                oracle.gelu(x, approximate),
            )


def add_positionwise_feedforward(fs: FixtureSet) -> None:
    for case_id, description, d_model, d_ff, shape in [
        (
            "d_ff_128",
            "d_model 32, d_ff 128, inputs ~N(0, 4) so pre-activations cover GELU's bend",
            32,
            128,
            (4, 12),
        ),
        (
            "d_ff_below_d_model",
            "d_model 24, d_ff 16, three leading dims",
            24,
            16,
            (2, 3, 5),
        ),
    ]:
        rng = fs.rng("positionwise_feedforward", case_id)
        x = normal(rng, *shape, d_model, std=2.0)
        w = {
            "w1.weight": linear_weight(rng, d_ff, d_model),
            "w2.weight": linear_weight(rng, d_model, d_ff),
        }
        fs.add(
            "positionwise_feedforward",
            case_id,
            description,
            {"d_model": d_model, "d_ff": d_ff},
            {"in_features": x},
            oracle.feedforward(x, w["w1.weight"], w["w2.weight"], activation="gelu"),
            w,
        )


SMALL = {
    "vocab_size": 128,
    "context_length": 16,
    "d_model": 32,
    "num_layers": 2,
    "num_heads": 4,
    "d_ff": 64,
    "rope_theta": 10000.0,
}
GPT2_SMALL_SHAPE = {
    "vocab_size": 257,
    "context_length": 24,
    "d_model": 48,
    "num_layers": 2,
    "num_heads": 3,
    "d_ff": 192,
}
GPT2 = GPT2_SMALL_SHAPE | {
    "norm": "layernorm",
    "positions": "learned",
    "ffn": "gelu",
    "gelu_approximate": "tanh",
    "bias": True,
    "tie_embeddings": True,
    # Training-time rates: the expected logits are the evaluation-mode model's, so an
    # adapter that leaves dropout on fails.
    "attn_dropout": 0.1,
    "residual_dropout": 0.1,
    "embedding_dropout": 0.1,
}
UPSTREAM_DEFAULT_FLAGS = {
    "remove_rmsnorm": False,
    "use_post_norm": False,
    "remove_rope": False,
    "ffn_type": None,
}

# (case id, what it catches, the config the adapter receives, the same model in the oracle's
# keys where the config uses upstream flags). The oracle configs of the upstream cases are
# written out by hand, so the flag mapping is checked rather than shared.
VARIANTS: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = [
    ("rmsnorm_default", "the default LLaMA-style model, built from a config", SMALL, None),
    (
        "layernorm",
        "LayerNorm with its shift in every norm, ln_final included",
        SMALL | {"norm": "layernorm"},
        None,
    ),
    ("no_norm", "norm none: no ln1, ln2 or ln_final at all", SMALL | {"norm": "none"}, None),
    (
        "post_norm",
        "post-norm blocks h = ln1(x + attn(x)), no ln_final",
        SMALL | {"norm_position": "post"},
        None,
    ),
    (
        "post_norm_layernorm",
        "the original Transformer's post-norm LayerNorm blocks",
        SMALL | {"norm_position": "post", "norm": "layernorm"},
        None,
    ),
    (
        "nope",
        "no position information: only the causal mask orders the tokens",
        SMALL | {"positions": "none"},
        None,
    ),
    (
        "learned_positions",
        "learned absolute positions added to the token embeddings, no RoPE",
        SMALL | {"positions": "learned"},
        None,
    ),
    (
        "rope_half",
        "RoPE pairing x[k] with x[k + d_k/2] (rotate half)",
        SMALL | {"rope_pairing": "half"},
        None,
    ),
    ("silu_ffn", "two-matrix SiLU FFN w2(silu(w1 x))", SMALL | {"ffn": "silu", "d_ff": 128}, None),
    ("gelu_ffn", "two-matrix exact-GELU FFN", SMALL | {"ffn": "gelu", "d_ff": 128}, None),
    (
        "gelu_tanh_ffn",
        "two-matrix tanh-GELU FFN",
        SMALL | {"ffn": "gelu", "gelu_approximate": "tanh", "d_ff": 128},
        None,
    ),
    (
        "bias",
        "biases on q/k/v/output and on all three SwiGLU matrices",
        SMALL | {"bias": True},
        None,
    ),
    (
        "tied_embeddings",
        "lm_head is token_embeddings (the weights have no lm_head.weight)",
        SMALL | {"tie_embeddings": True},
        None,
    ),
    (
        "upstream_config",
        "upstream model_config.json keys with every ablation flag off: the default model",
        SMALL | UPSTREAM_DEFAULT_FLAGS,
        SMALL,
    ),
    (
        "upstream_flags_post_norm_silu",
        "upstream flags use_post_norm and ffn_type silu",
        SMALL | UPSTREAM_DEFAULT_FLAGS | {"use_post_norm": True, "ffn_type": "silu", "d_ff": 128},
        SMALL | {"norm_position": "post", "ffn": "silu", "d_ff": 128},
    ),
    (
        "upstream_flags_no_norm_nope",
        "upstream flags remove_rmsnorm and remove_rope",
        SMALL | UPSTREAM_DEFAULT_FLAGS | {"remove_rmsnorm": True, "remove_rope": True},
        SMALL | {"norm": "none", "positions": "none"},
    ),
    (
        "remove_rope_learned_gelu",
        "remove_rope with learned positions and a GELU FFN: a pre-norm GPT-style model",
        SMALL | {"remove_rope": True, "positions": "learned", "ffn": "gelu", "d_ff": 128},
        SMALL | {"positions": "learned", "ffn": "gelu", "d_ff": 128},
    ),
    (
        "gpt2",
        "GPT-2: LayerNorm, learned positions, tanh-GELU MLP, biases, tied head; eval mode",
        GPT2,
        None,
    ),
]

# Variants run a second time, with the same weights, on this many tokens of their context:
# where positions are learned, only the first rows of the table may be added.
TRUNCATED_INPUTS = {"learned_positions": 7, "gpt2": 9}


def add_lm_variants(fs: FixtureSet) -> None:
    family = "transformer_lm_from_config"
    for case_id, description, config, oracle_config in VARIANTS:
        model = oracle_config or config
        weights = lm_weights(fs.rng(family, case_id), model)
        runs = [(case_id, description, config["context_length"])]
        if case_id in TRUNCATED_INPUTS:
            seq = TRUNCATED_INPUTS[case_id]
            context = config["context_length"]
            runs.append(
                (f"{case_id}_truncated_input", f"{description}; {seq} of {context} tokens", seq)
            )
        for run_id, run_description, seq in runs:
            ids = fs.rng(family, run_id, "ids").integers(0, config["vocab_size"], (2, seq))
            fs.add(
                family,
                run_id,
                run_description,
                {"config": config},
                {"in_indices": ids},
                oracle.transformer_lm(ids, weights, model),
                weights,
            )


def add_layernorm_backward(fs: FixtureSet) -> None:
    """LayerNorm's backward case."""
    rng = fs.rng("layernorm", "backward")
    gain, shift, eps = norm_gain(rng, 16), normal(rng, 16, std=0.1), 1e-5
    x = normal(rng, 3, 5, 16, std=2.0) + rng.uniform(-3, 3, (3, 5, 1)).astype(np.float32)
    add_backward_case(
        fs, "layernorm", "backward_row_offsets",
        "d_model 16, rows off centre: both the mean and the variance pass gradient back",
        {"d_model": 16, "eps": eps},
        {"in_features": x},
        lambda v: oracle.layernorm(v["in_features"], v["weight"], v["bias"], eps),
        lambda v, d: adapter_names(
            oracle.layernorm_backward(v["in_features"], v["weight"], v["bias"], d, eps)
        ),
        weights={"weight": gain, "bias": shift},
    )  # fmt: skip


def add_gelu_backward(fs: FixtureSet) -> None:
    """GELU's backward cases, exact and tanh."""
    for approximate, form in (("none", "exact"), ("tanh", "tanh")):
        rng = fs.rng("gelu", "backward", form)
        add_backward_case(
            fs, "gelu", f"backward_{form}",
            f"{form} GELU's derivative on values ~N(0, 4)",
            {"approximate": approximate},
            {"in_features": normal(rng, 2, 3, 17, std=2.0)},
            lambda v, a=approximate: oracle.gelu(v["in_features"], a),
            lambda v, d, a=approximate: {
                "in_features": oracle.gelu_backward(v["in_features"], d, a)["x"]
            },
        )  # fmt: skip


def add_positionwise_feedforward_backward(fs: FixtureSet) -> None:
    """The two-matrix FFN's backward case."""
    rng = fs.rng("positionwise_feedforward", "backward")
    w1, w2 = linear_weight(rng, 24, 16), linear_weight(rng, 16, 24)
    add_backward_case(
        fs, "positionwise_feedforward", "backward_d_ff_24",
        "d_model 16, d_ff 24, exact GELU, inputs ~N(0, 4)",
        {"d_model": 16, "d_ff": 24},
        {"in_features": normal(rng, 2, 5, 16, std=2.0)},
        lambda v: oracle.feedforward(v["in_features"], *matrices(v, "w1", "w2")),
        lambda v, d: adapter_names(
            oracle.feedforward_backward(v["in_features"], *matrices(v, "w1", "w2"), d)
        ),
        weights={"w1.weight": w1, "w2.weight": w2},
    )  # fmt: skip


def add_variants(fs: FixtureSet) -> None:
    """Add every architecture-variant family."""
    add_layernorm(fs)
    add_layernorm_backward(fs)
    add_gelu(fs)
    add_gelu_backward(fs)
    add_positionwise_feedforward(fs)
    add_positionwise_feedforward_backward(fs)
    add_lm_variants(fs)
