"""Float64 reference Transformer block and language model, for every SPEC architecture variant.

Weights are plain dicts from SPEC parameter names to arrays. The oracle is strict about them:
a missing name raises ``KeyError``, and an unexpected name or a wrong shape raises
``ValueError``, so a fixture built from the wrong weights cannot pass silently. Dropout is
not modelled: this is the evaluation-mode forward pass. ``transformer_block_backward`` and
``transformer_lm_backward`` follow their forwards (conventions: `gradients`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cs336_staff.oracle.attention import (
    ROPE_PAIRINGS,
    multihead_self_attention,
    multihead_self_attention_backward,
)
from cs336_staff.oracle.functional import (
    embedding,
    embedding_backward,
    f64,
    feedforward,
    feedforward_backward,
    layernorm,
    layernorm_backward,
    linear,
    linear_backward,
    rmsnorm,
    rmsnorm_backward,
    swiglu,
    swiglu_backward,
)
from cs336_staff.oracle.gradients import Grads, prefixed

__all__ = [
    "DEFAULT_CONFIG",
    "SIZE_KEYS",
    "lm_parameter_shapes",
    "transformer_block",
    "transformer_block_backward",
    "transformer_lm",
    "transformer_lm_backward",
]

Array = NDArray[np.float64]

#: Architecture options and their defaults (the LLaMA-style pre-norm decoder of the SPEC).
DEFAULT_CONFIG: dict[str, Any] = {
    "rope_theta": 10000.0,
    "norm": "rmsnorm",
    "norm_eps": 1e-5,
    "norm_position": "pre",
    "positions": "rope",
    "rope_pairing": "interleaved",
    "ffn": "swiglu",
    "gelu_approximate": "none",
    "bias": False,
    "tie_embeddings": False,
    # Accepted so that a training config can be passed unchanged; evaluation mode ignores them.
    "attn_dropout": 0.0,
    "residual_dropout": 0.0,
    "embedding_dropout": 0.0,
}

#: Size keys: required by ``transformer_lm``, optional for ``transformer_block``.
SIZE_KEYS = ("vocab_size", "context_length", "d_model", "num_layers", "num_heads", "d_ff")

_CHOICES: dict[str, tuple[Any, ...]] = {
    "norm": ("rmsnorm", "layernorm", "none"),
    "norm_position": ("pre", "post"),
    "positions": ("rope", "learned", "none"),
    "rope_pairing": ROPE_PAIRINGS,
    "ffn": ("swiglu", "silu", "gelu"),
    "gelu_approximate": ("none", "tanh"),
    "bias": (False, True),
    "tie_embeddings": (False, True),
}


def resolve_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """Fill in defaults and reject unknown keys or values (a typo must not mean "default")."""
    config = dict(config or {})
    unknown = set(config) - set(DEFAULT_CONFIG) - set(SIZE_KEYS)
    if unknown:
        raise ValueError(f"unknown config keys: {sorted(unknown)}")
    resolved = {**DEFAULT_CONFIG, **config}
    for key, allowed in _CHOICES.items():
        if resolved[key] not in allowed:
            raise ValueError(f"config {key}={resolved[key]!r}; expected one of {allowed}")
    return resolved


def block_parameter_shapes(
    cfg: Mapping[str, Any], d_model: int, d_ff: int
) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    bias = cfg["bias"]
    if cfg["norm"] != "none":
        for name in ("ln1", "ln2"):
            shapes[f"{name}.weight"] = (d_model,)
            # LayerNorm always has its shift; the `bias` option is about the matrices.
            if cfg["norm"] == "layernorm":
                shapes[f"{name}.bias"] = (d_model,)
    for proj in ("q_proj", "k_proj", "v_proj", "output_proj"):
        shapes[f"attn.{proj}.weight"] = (d_model, d_model)
        if bias:
            shapes[f"attn.{proj}.bias"] = (d_model,)
    ffn_shapes = {"w1": (d_ff, d_model), "w2": (d_model, d_ff)}
    if cfg["ffn"] == "swiglu":
        ffn_shapes["w3"] = (d_ff, d_model)
    for name, shape in ffn_shapes.items():
        shapes[f"ffn.{name}.weight"] = shape
        if bias:
            shapes[f"ffn.{name}.bias"] = (shape[0],)
    return shapes


def lm_parameter_shapes(config: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every parameter name of the language model described by ``config``, with its shape.

    With ``tie_embeddings`` the head is ``token_embeddings.weight`` and ``lm_head.weight`` is
    not listed.
    """
    cfg = resolve_config(config)
    vocab, d_model = cfg["vocab_size"], cfg["d_model"]
    shapes: dict[str, tuple[int, ...]] = {"token_embeddings.weight": (vocab, d_model)}
    if cfg["positions"] == "learned":
        shapes["position_embeddings.weight"] = (cfg["context_length"], d_model)
    block = block_parameter_shapes(cfg, d_model, cfg["d_ff"])
    for i in range(cfg["num_layers"]):
        shapes.update({f"layers.{i}.{name}": shape for name, shape in block.items()})
    if cfg["norm"] != "none" and cfg["norm_position"] == "pre":
        shapes["ln_final.weight"] = (d_model,)
        if cfg["norm"] == "layernorm":
            shapes["ln_final.bias"] = (d_model,)
    if not cfg["tie_embeddings"]:
        shapes["lm_head.weight"] = (vocab, d_model)
    return shapes


def check_weights(
    weights: Mapping[str, ArrayLike],
    expected: Mapping[str, tuple[int, ...]],
    where: str,
    optional: frozenset[str] = frozenset(),
) -> None:
    missing = sorted(set(expected) - set(weights))
    if missing:
        raise KeyError(f"{where}: missing weights {missing}")
    unexpected = sorted(set(weights) - set(expected) - optional)
    if unexpected:
        raise ValueError(f"{where}: unexpected weights {unexpected}")
    for name, shape in expected.items():
        actual = np.shape(weights[name])
        if actual != shape:
            raise ValueError(f"{where}: {name} has shape {actual}, expected {shape}")


def apply_norm(
    h: Array, weights: Mapping[str, ArrayLike], name: str, cfg: Mapping[str, Any]
) -> Array:
    if cfg["norm"] == "none":
        return h
    if cfg["norm"] == "rmsnorm":
        return rmsnorm(h, weights[f"{name}.weight"], eps=cfg["norm_eps"])
    return layernorm(h, weights[f"{name}.weight"], weights.get(f"{name}.bias"), eps=cfg["norm_eps"])


def ffn_arguments(
    weights: Mapping[str, ArrayLike], cfg: Mapping[str, Any]
) -> tuple[tuple[ArrayLike | None, ...], dict[str, Any]]:
    """The feed-forward's weights and options: `swiglu` (or `feedforward`) takes
    ``(h, *args, **kwargs)``, and its backward ``(h, *args, d, **kwargs)``."""
    w = weights.get
    if cfg["ffn"] == "swiglu":
        biases = {"b1": w("ffn.w1.bias"), "b2": w("ffn.w2.bias"), "b3": w("ffn.w3.bias")}
        return (w("ffn.w1.weight"), w("ffn.w2.weight"), w("ffn.w3.weight")), biases
    options = {"activation": cfg["ffn"], "approximate": cfg["gelu_approximate"]}
    biases = {"b1": w("ffn.w1.bias"), "b2": w("ffn.w2.bias")}
    return (w("ffn.w1.weight"), w("ffn.w2.weight")), options | biases


def attn_arguments(
    weights: Mapping[str, ArrayLike],
    num_heads: int,
    cfg: Mapping[str, Any],
    positions: ArrayLike | None,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The attention sublayer's weights and options, in the calling convention of
    `ffn_arguments`."""
    w = weights.get
    use_rope = cfg["positions"] == "rope"
    names = ("q_proj", "k_proj", "v_proj", "output_proj")
    projections = tuple(w(f"attn.{name}.weight") for name in names)
    return (*projections, num_heads), {
        "theta": cfg["rope_theta"] if use_rope else None,
        "positions": positions if use_rope else None,
        "pairing": cfg["rope_pairing"],
        "q_bias": w("attn.q_proj.bias"),
        "k_bias": w("attn.k_proj.bias"),
        "v_bias": w("attn.v_proj.bias"),
        "o_bias": w("attn.output_proj.bias"),
    }


def apply_ffn(h: Array, weights: Mapping[str, ArrayLike], cfg: Mapping[str, Any]) -> Array:
    args, kwargs = ffn_arguments(weights, cfg)
    return (swiglu if cfg["ffn"] == "swiglu" else feedforward)(h, *args, **kwargs)


def apply_attention(
    h: Array,
    weights: Mapping[str, ArrayLike],
    num_heads: int,
    cfg: Mapping[str, Any],
    positions: ArrayLike | None,
) -> Array:
    args, kwargs = attn_arguments(weights, num_heads, cfg, positions)
    return multihead_self_attention(h, *args, **kwargs)


def transformer_block(
    x: ArrayLike,
    weights: Mapping[str, ArrayLike],
    *,
    num_heads: int,
    config: Mapping[str, Any] | None = None,
    positions: ArrayLike | None = None,
) -> Array:
    """One Transformer block.

    Pre-norm: ``h = x + attn(norm1(x)); out = h + ffn(norm2(h))``.
    Post-norm: ``h = norm1(x + attn(x)); out = norm2(h + ffn(h))``.

    Args:
        x: ``(..., seq, d_model)``.
        weights: block-relative names (``ln1.weight``, ``attn.q_proj.weight``,
            ``ffn.w1.weight``, ``*.bias`` where the config has them), exactly those.
        num_heads: attention heads.
        config: architecture options (see ``DEFAULT_CONFIG``); None = the defaults. Size keys
            are optional here; ``d_ff`` defaults to the rows of ``ffn.w1.weight``.
        positions: integer RoPE positions broadcastable to ``(..., seq)``; default
            ``arange(seq)``. Ignored unless the config uses RoPE.

    Returns:
        ``(..., seq, d_model)``.
    """
    cfg = resolve_config(config)
    x = np.asarray(x, dtype=np.float64)
    d_model = x.shape[-1]
    if cfg.get("d_model", d_model) != d_model:
        raise ValueError(f"transformer_block: x has d_model {d_model}, config {cfg['d_model']}")
    if cfg.get("num_heads", num_heads) != num_heads:
        raise ValueError(f"transformer_block: num_heads {num_heads}, config {cfg['num_heads']}")
    if "ffn.w1.weight" not in weights:
        raise KeyError("transformer_block: missing weights ['ffn.w1.weight']")
    d_ff = cfg.get("d_ff", np.shape(weights["ffn.w1.weight"])[0])
    check_weights(weights, block_parameter_shapes(cfg, d_model, d_ff), "transformer_block")

    if cfg["norm_position"] == "pre":
        h = x + apply_attention(
            apply_norm(x, weights, "ln1", cfg), weights, num_heads, cfg, positions
        )
        return h + apply_ffn(apply_norm(h, weights, "ln2", cfg), weights, cfg)
    h = apply_norm(x + apply_attention(x, weights, num_heads, cfg, positions), weights, "ln1", cfg)
    return apply_norm(h + apply_ffn(h, weights, cfg), weights, "ln2", cfg)


def _norm_backward(
    h: Array, weights: Mapping[str, ArrayLike], name: str, cfg: Mapping[str, Any], d: Array
) -> Grads:
    if cfg["norm"] == "none":
        return {"x": d}
    if cfg["norm"] == "rmsnorm":
        grads = rmsnorm_backward(h, weights[f"{name}.weight"], d, cfg["norm_eps"])
    else:
        grads = layernorm_backward(
            h, weights[f"{name}.weight"], weights.get(f"{name}.bias"), d, cfg["norm_eps"]
        )
    return {"x": grads["x"]} | prefixed(grads, f"{name}.")


def _ffn_backward(
    h: Array, weights: Mapping[str, ArrayLike], cfg: Mapping[str, Any], d: Array
) -> Grads:
    args, kwargs = ffn_arguments(weights, cfg)
    backward = swiglu_backward if cfg["ffn"] == "swiglu" else feedforward_backward
    grads = backward(h, *args, d, **kwargs)
    return {"x": grads["x"]} | prefixed(grads, "ffn.")


def _attn_backward(
    h: Array,
    weights: Mapping[str, ArrayLike],
    num_heads: int,
    cfg: Mapping[str, Any],
    positions: ArrayLike | None,
    d: Array,
) -> Grads:
    args, kwargs = attn_arguments(weights, num_heads, cfg, positions)
    grads = multihead_self_attention_backward(h, *args, d, **kwargs)
    return {"x": grads["x"]} | prefixed(grads, "attn.")


def _block_backward(
    x: Array,
    weights: Mapping[str, ArrayLike],
    num_heads: int,
    cfg: Mapping[str, Any],
    positions: ArrayLike | None,
    d_out: Array,
) -> Grads:
    """A block's gradients for a resolved config and checked weights (see the public one)."""
    grads: Grads = {}

    def back(sublayer: Grads) -> Array:
        """Keep a sublayer's parameter gradients; pass its input gradient on."""
        grads.update(prefixed(sublayer, ""))
        return sublayer["x"]

    def attn_back(h: Array, d: Array) -> Array:
        return back(_attn_backward(h, weights, num_heads, cfg, positions, d))

    def ffn_back(h: Array, d: Array) -> Array:
        return back(_ffn_backward(h, weights, cfg, d))

    def norm_back(h: Array, name: str, d: Array) -> Array:
        return back(_norm_backward(h, weights, name, cfg, d))

    if cfg["norm_position"] == "pre":
        # h = x + attn(norm1(x)); out = h + ffn(norm2(h))
        n1 = apply_norm(x, weights, "ln1", cfg)
        h = x + apply_attention(n1, weights, num_heads, cfg, positions)
        d_h = d_out + norm_back(h, "ln2", ffn_back(apply_norm(h, weights, "ln2", cfg), d_out))
        d_x = d_h + norm_back(x, "ln1", attn_back(n1, d_h))
    else:
        # h = norm1(x + attn(x)); out = norm2(h + ffn(h))
        s1 = x + apply_attention(x, weights, num_heads, cfg, positions)
        h = apply_norm(s1, weights, "ln1", cfg)
        d_s2 = norm_back(h + apply_ffn(h, weights, cfg), "ln2", d_out)
        d_s1 = norm_back(s1, "ln1", d_s2 + ffn_back(h, d_s2))
        d_x = d_s1 + attn_back(x, d_s1)
    return {"x": d_x} | grads


def transformer_block_backward(
    x: ArrayLike,
    weights: Mapping[str, ArrayLike],
    d_out: ArrayLike,
    *,
    num_heads: int,
    config: Mapping[str, Any] | None = None,
    positions: ArrayLike | None = None,
) -> Grads:
    """Of ``transformer_block`` (same arguments, any variant). Returns ``x`` and every
    block-relative parameter name (``ln1.weight``, ``attn.q_proj.weight``, ...)."""
    cfg = resolve_config(config)
    x = f64(x)
    d_model = x.shape[-1]
    if "ffn.w1.weight" not in weights:
        raise KeyError("transformer_block: missing weights ['ffn.w1.weight']")
    d_ff = cfg.get("d_ff", np.shape(weights["ffn.w1.weight"])[0])
    check_weights(weights, block_parameter_shapes(cfg, d_model, d_ff), "transformer_block")
    return _block_backward(x, weights, num_heads, cfg, positions, f64(d_out))


def transformer_lm(
    ids: ArrayLike, weights: Mapping[str, ArrayLike], config: Mapping[str, Any]
) -> Array:
    """Decoder-only language model: embeddings → blocks → (ln_final) → head → logits.

    Args:
        ids: integer token ids ``(batch, seq)``, ``seq ≤ context_length``, each in
            ``[0, vocab_size)``.
        weights: full parameter names (see ``lm_parameter_shapes``), exactly those; with
            ``tie_embeddings`` an ``lm_head.weight`` equal to ``token_embeddings.weight`` is
            also accepted.
        config: must hold every key of ``SIZE_KEYS``; other options default.

    Returns:
        unnormalised logits ``(batch, seq, vocab_size)``.
    """
    cfg = resolve_config(config)
    missing = [key for key in SIZE_KEYS if key not in cfg]
    if missing:
        raise KeyError(f"transformer_lm: config lacks {missing}")
    ids = np.asarray(ids)
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"transformer_lm: ids must be integers, got {ids.dtype}")
    if ids.ndim < 1:
        raise ValueError("transformer_lm: ids need a sequence dimension")
    seq = ids.shape[-1]
    if seq > cfg["context_length"]:
        raise ValueError(f"transformer_lm: seq {seq} > context_length {cfg['context_length']}")
    if ids.size and (ids.min() < 0 or ids.max() >= cfg["vocab_size"]):
        raise ValueError(f"transformer_lm: ids must lie in [0, {cfg['vocab_size']})")

    tied = cfg["tie_embeddings"]
    optional = frozenset({"lm_head.weight"}) if tied else frozenset()
    check_weights(weights, lm_parameter_shapes(cfg), "transformer_lm", optional)
    if (
        tied
        and "lm_head.weight" in weights
        and not np.array_equal(
            np.asarray(weights["lm_head.weight"]), np.asarray(weights["token_embeddings.weight"])
        )
    ):
        raise ValueError("transformer_lm: tied embeddings, but lm_head.weight differs")

    x = embedding(weights["token_embeddings.weight"], ids)
    if cfg["positions"] == "learned":
        x = x + np.asarray(weights["position_embeddings.weight"], dtype=np.float64)[:seq]
    positions = np.arange(seq)
    for i in range(cfg["num_layers"]):
        prefix = f"layers.{i}."
        block_weights = {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
        x = transformer_block(
            x, block_weights, num_heads=cfg["num_heads"], config=cfg, positions=positions
        )
    if cfg["norm_position"] == "pre":
        x = apply_norm(x, weights, "ln_final", cfg)
    head = weights["token_embeddings.weight"] if tied else weights["lm_head.weight"]
    return linear(x, head)


def transformer_lm_backward(
    config: Mapping[str, Any],
    weights: Mapping[str, ArrayLike],
    token_ids: ArrayLike,
    d_logits: ArrayLike,
) -> dict[str, np.ndarray]:
    """Of ``transformer_lm(token_ids, weights, config)`` with respect to every parameter.

    Args:
        config: as ``transformer_lm`` (every size key, any variant).
        weights: as ``transformer_lm``.
        token_ids: integer ``(batch, seq)``.
        d_logits: ``(batch, seq, vocab_size)``, the upstream gradient.

    Returns:
        the gradient of ``sum(d_logits * logits)`` for each name of
        ``lm_parameter_shapes(config)``. With tied embeddings ``token_embeddings.weight``
        gets the lookup's and the head's gradients summed, and there is no ``lm_head.weight``.
    """
    cfg = resolve_config(config)
    missing = [key for key in SIZE_KEYS if key not in cfg]
    if missing:
        raise KeyError(f"transformer_lm_backward: config lacks {missing}")
    shapes = lm_parameter_shapes(cfg)
    tied = cfg["tie_embeddings"]
    optional = frozenset({"lm_head.weight"}) if tied else frozenset()
    check_weights(weights, shapes, "transformer_lm_backward", optional)
    ids = np.asarray(token_ids)
    seq = ids.shape[-1]
    if seq > cfg["context_length"]:
        raise ValueError(f"transformer_lm_backward: seq {seq} > context_length")
    d_logits = f64(d_logits)
    if d_logits.shape != (*ids.shape, cfg["vocab_size"]):
        raise ValueError(f"transformer_lm_backward: d_logits {d_logits.shape} for ids {ids.shape}")
    table = f64(weights["token_embeddings.weight"])
    head = table if tied else f64(weights["lm_head.weight"])

    hidden = [embedding(table, ids)]
    if cfg["positions"] == "learned":
        hidden[0] = hidden[0] + f64(weights["position_embeddings.weight"])[:seq]
    positions = np.arange(seq)
    layers = []
    for i in range(cfg["num_layers"]):
        prefix = f"layers.{i}."
        layers.append({k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)})
        hidden.append(
            transformer_block(
                hidden[-1], layers[-1], num_heads=cfg["num_heads"], config=cfg, positions=positions
            )
        )
    final_norm = cfg["norm_position"] == "pre"
    normed = apply_norm(hidden[-1], weights, "ln_final", cfg) if final_norm else hidden[-1]

    head_grads = linear_backward(normed, head, d_logits)
    grads: dict[str, np.ndarray] = {}
    d = head_grads["x"]
    if final_norm:
        final = _norm_backward(hidden[-1], weights, "ln_final", cfg, d)
        d = final.pop("x")
        grads |= final
    for i in reversed(range(cfg["num_layers"])):
        block = _block_backward(hidden[i], layers[i], cfg["num_heads"], cfg, positions, d)
        d = block.pop("x")
        grads |= prefixed(block, f"layers.{i}.")
    grads["token_embeddings.weight"] = embedding_backward(table, ids, d)["weight"]
    if tied:
        grads["token_embeddings.weight"] += head_grads["weight"]
    else:
        grads["lm_head.weight"] = head_grads["weight"]
    if cfg["positions"] == "learned":
        d_positions = np.zeros(shapes["position_embeddings.weight"])
        d_positions[:seq] = d.reshape(-1, seq, d.shape[-1]).sum(axis=0)
        grads["position_embeddings.weight"] = d_positions
    return {name: grads[name] for name in shapes}


#: Every sublayer's input and output in one forward pass, keyed by its module name (SPEC).
Sublayers = dict[str, tuple[Array, Array]]


def _block_sublayers(
    x: Array,
    weights: Mapping[str, ArrayLike],
    num_heads: int,
    cfg: Mapping[str, Any],
    positions: ArrayLike | None,
    prefix: str,
    record: Sublayers,
) -> Array:
    """``transformer_block``'s forward, operation for operation (so its output is bit for bit
    the same), recording each sublayer it runs under ``prefix + name``."""

    def run(name: str, sublayer: Any, h: Array) -> Array:
        out = sublayer(h)
        record[prefix + name] = (h, out)
        return out

    def norm(name: str, h: Array) -> Array:
        return (
            h
            if cfg["norm"] == "none"
            else run(name, lambda v: apply_norm(v, weights, name, cfg), h)
        )

    def attn(h: Array) -> Array:
        return run("attn", lambda v: apply_attention(v, weights, num_heads, cfg, positions), h)

    def ffn(h: Array) -> Array:
        return run("ffn", lambda v: apply_ffn(v, weights, cfg), h)

    if cfg["norm_position"] == "pre":
        h = x + attn(norm("ln1", x))
        return h + ffn(norm("ln2", h))
    h = norm("ln1", x + attn(x))
    return norm("ln2", h + ffn(h))


def transformer_block_sublayers(
    x: ArrayLike,
    weights: Mapping[str, ArrayLike],
    *,
    num_heads: int,
    config: Mapping[str, Any] | None = None,
    positions: ArrayLike | None = None,
) -> Sublayers:
    """The input and output of each sublayer of ``transformer_block`` (same arguments), in
    the order they run: ``ln1``, ``attn``, ``ln2``, ``ffn`` (post-norm: ``attn``, ``ln1``,
    ``ffn``, ``ln2``; no norms with ``norm: "none"``).

    Each value is ``(input, output)``, ``(..., seq, d_model)`` both; the last output is
    ``transformer_block``'s result, bit for bit.
    """
    cfg = resolve_config(config)
    x = np.asarray(x, dtype=np.float64)
    if "ffn.w1.weight" not in weights:
        raise KeyError("transformer_block_sublayers: missing weights ['ffn.w1.weight']")
    d_ff = cfg.get("d_ff", np.shape(weights["ffn.w1.weight"])[0])
    shapes = block_parameter_shapes(cfg, x.shape[-1], d_ff)
    check_weights(weights, shapes, "transformer_block_sublayers")
    record: Sublayers = {}
    _block_sublayers(x, weights, num_heads, cfg, positions, "", record)
    return record


def transformer_lm_sublayers(
    ids: ArrayLike, weights: Mapping[str, ArrayLike], config: Mapping[str, Any]
) -> Sublayers:
    """The input and output of each sublayer of ``transformer_lm`` (same arguments), in the
    order they run: each block's as ``transformer_block_sublayers`` names them, prefixed
    ``layers.{i}.``, then ``ln_final`` (pre-norm models with a norm) and ``lm_head``.

    Each value is ``(input, output)``: ``(batch, seq, d_model)``, except ``lm_head``'s output,
    the logits ``(batch, seq, vocab_size)``, which are ``transformer_lm``'s, bit for bit.
    """
    cfg = resolve_config(config)
    missing = [key for key in SIZE_KEYS if key not in cfg]
    if missing:
        raise KeyError(f"transformer_lm_sublayers: config lacks {missing}")
    seq = np.shape(ids)[-1]
    if seq > cfg["context_length"]:
        raise ValueError(
            f"transformer_lm_sublayers: seq {seq} > context_length {cfg['context_length']}"
        )
    tied = cfg["tie_embeddings"]
    optional = frozenset({"lm_head.weight"}) if tied else frozenset()
    check_weights(weights, lm_parameter_shapes(cfg), "transformer_lm_sublayers", optional)

    record: Sublayers = {}
    x = embedding(weights["token_embeddings.weight"], ids)
    if cfg["positions"] == "learned":
        x = x + np.asarray(weights["position_embeddings.weight"], dtype=np.float64)[:seq]
    positions = np.arange(seq)
    for i in range(cfg["num_layers"]):
        prefix = f"layers.{i}."
        block_weights = {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
        x = _block_sublayers(x, block_weights, cfg["num_heads"], cfg, positions, prefix, record)
    if cfg["norm_position"] == "pre" and cfg["norm"] != "none":
        record["ln_final"] = (x, apply_norm(x, weights, "ln_final", cfg))
        x = record["ln_final"][1]
    head = weights["token_embeddings.weight"] if tied else weights["lm_head.weight"]
    record["lm_head"] = (x, linear(x, head))
    return record
