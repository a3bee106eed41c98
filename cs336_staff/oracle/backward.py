"""Float64 reference gradients of every differentiable component, written out by hand.

Every ``*_backward`` function takes the forward's arguments with the upstream gradient
``d_out`` (the shape of the forward's output) after its positional ones, and returns the
gradient of ``sum(d_out * forward(...))`` with respect to every floating input and
parameter, as a dict: ``"x"`` (or ``"q"``, ``"k"``, ``"v"``, ``"logits"``) for the inputs,
the SPEC parameter names relative to the component for the parameters (``"weight"``,
``"w1.weight"``, ``"attn.q_proj.weight"``, ...), biases only where the forward got one.
Forward values come from the forward oracle; each backward composes the backward of its
primitives, in the reverse order of the forward. `check_gradients` verifies any of them
against central finite differences, which is how the generator and
``tests/harness/test_oracle_backward.py`` make sure these formulas are right.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cs336_staff.oracle.attention import rope, scaled_dot_product_attention
from cs336_staff.oracle.functional import (
    embedding,
    gelu,
    linear,
    silu,
    softmax,
)
from cs336_staff.oracle.model import (
    SIZE_KEYS,
    apply_attention,
    apply_ffn,
    apply_norm,
    attn_arguments,
    block_parameter_shapes,
    check_weights,
    ffn_arguments,
    lm_parameter_shapes,
    resolve_config,
    transformer_block,
)

Array = NDArray[np.float64]
Grads = dict[str, Array]


def _f64(x: ArrayLike) -> Array:
    return np.asarray(x, dtype=np.float64)


def _prefixed(grads: Mapping[str, Array], prefix: str) -> Grads:
    """The parameter gradients of a sub-component under its name in the parent; not "x"."""
    return {f"{prefix}{name}": g for name, g in grads.items() if name != "x"}


def _unbroadcast(grad: Array, shape: tuple[int, ...]) -> Array:
    """Sum `grad` over the axes along which an input of `shape` was broadcast to it."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra > 0 else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def _rows(t: Array) -> Array:
    """``(..., n)`` as ``(rows, n)``: parameter gradients sum over every leading position."""
    return t.reshape(-1, t.shape[-1])


# -- elementwise and normalising primitives ----------------------------------------------------


def linear_backward(
    x: ArrayLike, weight: ArrayLike, d_out: ArrayLike, bias: ArrayLike | None = None
) -> Grads:
    """Of ``y = x @ weight.T (+ bias)``: ``x (..., in)``, ``weight (out, in)``,
    ``d_out (..., out)``. Returns ``x``, ``weight`` and, with a bias, ``bias``."""
    x, weight, d_out = _f64(x), _f64(weight), _f64(d_out)
    # As 2-D products: NumPy's stacked matmul does not reach the BLAS (100 times slower).
    d_x = (_rows(d_out) @ weight).reshape(*d_out.shape[:-1], weight.shape[1])
    grads = {"x": d_x, "weight": _rows(d_out).T @ _rows(x)}
    if bias is not None:
        grads["bias"] = _rows(d_out).sum(axis=0)
    return grads


def embedding_backward(weight: ArrayLike, ids: ArrayLike, d_out: ArrayLike) -> Grads:
    """Of ``weight[ids]``: ``weight (vocab, d_model)``, ``d_out (..., d_model)``. Returns
    ``weight`` only: a repeated id gets the sum of its rows' gradients."""
    weight, ids, d_out = _f64(weight), np.asarray(ids), _f64(d_out)
    grad = np.zeros_like(weight)
    np.add.at(grad, ids.reshape(-1), _rows(d_out))
    return {"weight": grad}


def rmsnorm_backward(x: ArrayLike, weight: ArrayLike, d_out: ArrayLike, eps: float = 1e-5) -> Grads:
    """Of ``x / rms(x) * weight``, ``rms = sqrt(mean(x²) + eps)``, over the last dim.
    Returns ``x`` and ``weight``.

    The normaliser depends on ``x`` too: besides ``weight * d_out / rms`` the input gradient
    has the term ``-x̂ · mean(x̂ · weight · d_out) / rms`` (``x̂ = x / rms``), the one a
    normaliser detached from the graph loses.
    """
    x, weight, d_out = _f64(x), _f64(weight), _f64(d_out)
    inv_rms = 1.0 / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)
    x_hat = x * inv_rms
    d_hat = d_out * weight
    d_x = inv_rms * (d_hat - x_hat * np.mean(d_hat * x_hat, axis=-1, keepdims=True))
    return {"x": d_x, "weight": _rows(d_out * x_hat).sum(axis=0)}


def layernorm_backward(
    x: ArrayLike,
    weight: ArrayLike,
    bias: ArrayLike | None,
    d_out: ArrayLike,
    eps: float = 1e-5,
) -> Grads:
    """Of ``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dim (biased
    variance). Returns ``x``, ``weight`` and, with a bias, ``bias``."""
    x, weight, d_out = _f64(x), _f64(weight), _f64(d_out)
    centred = x - np.mean(x, axis=-1, keepdims=True)
    inv_std = 1.0 / np.sqrt(np.mean(centred**2, axis=-1, keepdims=True) + eps)
    x_hat = centred * inv_std
    d_hat = d_out * weight
    d_x = inv_std * (
        d_hat
        - np.mean(d_hat, axis=-1, keepdims=True)
        - x_hat * np.mean(d_hat * x_hat, axis=-1, keepdims=True)
    )
    grads = {"x": d_x, "weight": _rows(d_out * x_hat).sum(axis=0)}
    if bias is not None:
        grads["bias"] = _rows(d_out).sum(axis=0)
    return grads


def silu_backward(x: ArrayLike, d_out: ArrayLike) -> Grads:
    """Of ``x * sigmoid(x)``, elementwise: ``sigmoid(x) (1 + x (1 - sigmoid(x)))``."""
    x, d_out = _f64(x), _f64(d_out)
    # The tanh form of the sigmoid cannot overflow for any x.
    s = 0.5 * (1.0 + np.tanh(0.5 * x))
    return {"x": d_out * s * (1.0 + x * (1.0 - s))}


_erf = np.vectorize(math.erf, otypes=[np.float64])
_TANH_SCALE = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715


def gelu_backward(x: ArrayLike, d_out: ArrayLike, approximate: str = "none") -> Grads:
    """Of GELU, elementwise: ``Φ(x) + x φ(x)`` exactly, or the derivative of GPT-2's tanh
    form ``0.5 x (1 + tanh(c (x + 0.044715 x³)))``, ``c = sqrt(2/π)``."""
    x, d_out = _f64(x), _f64(d_out)
    if approximate == "none":
        cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
        pdf = np.exp(-0.5 * x**2) / math.sqrt(2.0 * math.pi)
        return {"x": d_out * (cdf + x * pdf)}
    if approximate == "tanh":
        t = np.tanh(_TANH_SCALE * (x + _TANH_CUBIC * x**3))
        inner = _TANH_SCALE * (1.0 + 3.0 * _TANH_CUBIC * x**2)
        return {"x": d_out * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t**2) * inner)}
    raise ValueError(f"gelu_backward: approximate must be 'none' or 'tanh', got {approximate!r}")


def softmax_backward(x: ArrayLike, dim: int, d_out: ArrayLike) -> Grads:
    """Of ``softmax(x, dim)``: ``p (d_out - sum(p d_out, dim))``."""
    p, d_out = softmax(x, dim), _f64(d_out)
    return {"x": p * (d_out - np.sum(p * d_out, axis=dim, keepdims=True))}


def cross_entropy_backward(logits: ArrayLike, targets: ArrayLike, d_out: float = 1.0) -> Grads:
    """Of the mean cross-entropy, a scalar (so ``d_out`` is a number): ``d_out · (softmax(
    logits) − one_hot(targets)) / N`` over the ``N`` leading positions. Returns ``logits``."""
    logits, targets = _f64(logits), np.asarray(targets)
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"cross_entropy_backward: logits {logits.shape}, targets {targets.shape}")
    targets = targets.astype(np.int64)
    grad = softmax(logits, -1)
    np.put_along_axis(
        grad, targets[..., None], np.take_along_axis(grad, targets[..., None], -1) - 1.0, -1
    )
    count = max(targets.size, 1)
    return {"logits": float(d_out) * grad / count}


# -- feed-forward networks ---------------------------------------------------------------------


def swiglu_backward(
    x: ArrayLike,
    w1: ArrayLike,
    w2: ArrayLike,
    w3: ArrayLike,
    d_out: ArrayLike,
    b1: ArrayLike | None = None,
    b2: ArrayLike | None = None,
    b3: ArrayLike | None = None,
) -> Grads:
    """Of ``w2(silu(w1 x) * w3 x)`` (shapes as ``swiglu``). Returns ``x``, ``w1.weight``,
    ``w2.weight``, ``w3.weight`` and the ``w*.bias`` given."""
    x = _f64(x)
    gate_in, value = linear(x, w1, b1), linear(x, w3, b3)
    gate = silu(gate_in)
    out = linear_backward(gate * value, w2, d_out, b2)
    into_gate = silu_backward(gate_in, out["x"] * value)["x"]
    first = linear_backward(x, w1, into_gate, b1)
    third = linear_backward(x, w3, out["x"] * gate, b3)
    return (
        {"x": first["x"] + third["x"]}
        | _prefixed(first, "w1.")
        | _prefixed(out, "w2.")
        | _prefixed(third, "w3.")
    )


def feedforward_backward(
    x: ArrayLike,
    w1: ArrayLike,
    w2: ArrayLike,
    d_out: ArrayLike,
    activation: str = "gelu",
    approximate: str = "none",
    b1: ArrayLike | None = None,
    b2: ArrayLike | None = None,
) -> Grads:
    """Of ``w2(act(w1 x))`` (as ``feedforward``). Returns ``x``, ``w1.weight``,
    ``w2.weight`` and the ``w*.bias`` given."""
    if activation not in ("gelu", "silu"):
        raise ValueError(f"feedforward_backward: activation gelu or silu, not {activation!r}")
    x = _f64(x)
    hidden_in = linear(x, w1, b1)
    if activation == "gelu":
        hidden = gelu(hidden_in, approximate)
        d_hidden = functools.partial(gelu_backward, approximate=approximate)
    else:
        hidden, d_hidden = silu(hidden_in), silu_backward
    out = linear_backward(hidden, w2, d_out, b2)
    d_hidden_in = d_hidden(hidden_in, out["x"])["x"]
    first = linear_backward(x, w1, d_hidden_in, b1)
    return {"x": first["x"]} | _prefixed(first, "w1.") | _prefixed(out, "w2.")


# -- positions and attention -------------------------------------------------------------------


def rope_backward(
    x: ArrayLike, positions: ArrayLike, theta: float, d_out: ArrayLike, pairing: str = "interleaved"
) -> Grads:
    """Of ``rope(x, positions, theta, pairing)``. Returns ``x``.

    Each pair is rotated by an orthogonal matrix, whose transpose is the rotation by the
    opposite angle: the gradient is ``d_out`` rotated back, i.e. RoPE at ``-positions``
    (``x`` itself is not needed: the map is linear).
    """
    if np.shape(d_out) != np.shape(x):
        raise ValueError(f"rope_backward: d_out {np.shape(d_out)} for x {np.shape(x)}")
    return {"x": rope(d_out, -np.asarray(positions), theta, pairing)}


def attention_probabilities(q: ArrayLike, k: ArrayLike, mask: ArrayLike | None = None) -> Array:
    """``softmax(q kᵀ / sqrt(d_k), masked)``, ``(..., n, m)``, a fully masked row all zero."""
    m = np.shape(k)[-2]
    # The forward's attention with V = I returns its weights themselves (each output entry
    # is one weight times 1, exactly), so the probabilities are the forward oracle's own.
    return scaled_dot_product_attention(q, k, np.eye(m), mask)


def scaled_dot_product_attention_backward(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, d_out: ArrayLike, mask: ArrayLike | None = None
) -> Grads:
    """Of ``softmax(q kᵀ / sqrt(d_k), masked) v`` (shapes as the forward). Returns ``q``,
    ``k``, ``v``, each summed back to its own shape where it was broadcast.

    Masked scores get no gradient: their probability is exactly 0, so the softmax backward
    ``p (d_p - sum(p d_p))`` is 0 there, and a fully masked row passes nothing back.
    """
    q, k, v, d_out = _f64(q), _f64(k), _f64(v), _f64(d_out)
    scale = 1.0 / math.sqrt(q.shape[-1])
    p = attention_probabilities(q, k, mask)
    d_v = np.swapaxes(p, -1, -2) @ d_out
    d_p = d_out @ np.swapaxes(v, -1, -2)
    d_scores = p * (d_p - np.sum(p * d_p, axis=-1, keepdims=True)) * scale
    return {
        "q": _unbroadcast(d_scores @ k, q.shape),
        "k": _unbroadcast(np.swapaxes(d_scores, -1, -2) @ q, k.shape),
        "v": _unbroadcast(d_v, v.shape),
    }


def multihead_self_attention_backward(
    x: ArrayLike,
    q_weight: ArrayLike,
    k_weight: ArrayLike,
    v_weight: ArrayLike,
    o_weight: ArrayLike,
    num_heads: int,
    d_out: ArrayLike,
    *,
    theta: float | None = None,
    positions: ArrayLike | None = None,
    pairing: str = "interleaved",
    q_bias: ArrayLike | None = None,
    k_bias: ArrayLike | None = None,
    v_bias: ArrayLike | None = None,
    o_bias: ArrayLike | None = None,
) -> Grads:
    """Of causal multi-head self-attention, with RoPE when ``theta`` is given (arguments as
    ``multihead_self_attention``). Returns ``x``, ``q_proj.weight``, ``k_proj.weight``,
    ``v_proj.weight``, ``output_proj.weight`` and the ``*.bias`` given."""
    x = _f64(x)
    seq, d_model = x.shape[-2], x.shape[-1]
    if num_heads <= 0 or d_model % num_heads != 0:
        raise ValueError(f"multihead_self_attention: {num_heads} heads do not divide {d_model}")
    d_k = d_model // num_heads

    def split_heads(t: Array) -> Array:  # (..., seq, d_model) -> (..., heads, seq, d_k)
        return np.swapaxes(t.reshape(*t.shape[:-1], num_heads, d_k), -2, -3)

    def merge_heads(t: Array) -> Array:  # the inverse of split_heads
        return np.swapaxes(t, -2, -3).reshape(*x.shape[:-1], d_model)

    projections = {
        "q_proj.": (q_weight, q_bias),
        "k_proj.": (k_weight, k_bias),
        "v_proj.": (v_weight, v_bias),
    }
    q, k, v = (split_heads(linear(x, w, b)) for w, b in projections.values())
    if theta is not None:
        pos = np.arange(seq) if positions is None else np.asarray(positions)
        pos = np.expand_dims(np.broadcast_to(pos, x.shape[:-1]), -2)  # one row for every head
        q_in, k_in = q, k
        q, k = rope(q_in, pos, theta, pairing), rope(k_in, pos, theta, pairing)
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    heads = scaled_dot_product_attention(q, k, v, causal)

    out = linear_backward(merge_heads(heads), o_weight, d_out, o_bias)
    attn = scaled_dot_product_attention_backward(q, k, v, split_heads(out["x"]), causal)
    if theta is not None:
        attn["q"] = rope_backward(q_in, pos, theta, attn["q"], pairing)["x"]
        attn["k"] = rope_backward(k_in, pos, theta, attn["k"], pairing)["x"]
    grads: Grads = {"x": np.zeros_like(x)}
    for (prefix, (w, b)), name in zip(projections.items(), ("q", "k", "v"), strict=True):
        projection = linear_backward(x, w, merge_heads(attn[name]), b)
        grads["x"] += projection["x"]
        grads |= _prefixed(projection, prefix)
    return grads | _prefixed(out, "output_proj.")


# -- the block and the language model ----------------------------------------------------------


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
    return {"x": grads["x"]} | _prefixed(grads, f"{name}.")


def _ffn_backward(
    h: Array, weights: Mapping[str, ArrayLike], cfg: Mapping[str, Any], d: Array
) -> Grads:
    args, kwargs = ffn_arguments(weights, cfg)
    backward = swiglu_backward if cfg["ffn"] == "swiglu" else feedforward_backward
    grads = backward(h, *args, d, **kwargs)
    return {"x": grads["x"]} | _prefixed(grads, "ffn.")


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
    return {"x": grads["x"]} | _prefixed(grads, "attn.")


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
        grads.update(_prefixed(sublayer, ""))
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
    x = _f64(x)
    d_model = x.shape[-1]
    if "ffn.w1.weight" not in weights:
        raise KeyError("transformer_block: missing weights ['ffn.w1.weight']")
    d_ff = cfg.get("d_ff", np.shape(weights["ffn.w1.weight"])[0])
    check_weights(weights, block_parameter_shapes(cfg, d_model, d_ff), "transformer_block")
    return _block_backward(x, weights, num_heads, cfg, positions, _f64(d_out))


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
    d_logits = _f64(d_logits)
    if d_logits.shape != (*ids.shape, cfg["vocab_size"]):
        raise ValueError(f"transformer_lm_backward: d_logits {d_logits.shape} for ids {ids.shape}")
    table = _f64(weights["token_embeddings.weight"])
    head = table if tied else _f64(weights["lm_head.weight"])

    hidden = [embedding(table, ids)]
    if cfg["positions"] == "learned":
        hidden[0] = hidden[0] + _f64(weights["position_embeddings.weight"])[:seq]
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
        grads |= _prefixed(block, f"layers.{i}.")
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


# -- verification ------------------------------------------------------------------------------

# Central differences in float64 with a step of 1e-5 (times the input's scale): the
# truncation error, step² times a third derivative, and the rounding, 1e-16 · |f| / step, are
# both near 1e-10 relative, while a wrong formula is off by far more than FD_RTOL.
FD_STEP = 1e-5
FD_RTOL = 1e-6


class GradientCheckError(AssertionError):
    """An analytic gradient disagrees with the finite difference of the forward."""


def check_gradients(
    forward: Callable[[Mapping[str, Array]], Array],
    inputs: Mapping[str, ArrayLike],
    grads: Mapping[str, ArrayLike],
    d_out: ArrayLike,
    rng: np.random.Generator,
    directions: int = 1,
) -> None:
    """Raise `GradientCheckError` unless every gradient in `grads` is the derivative of
    ``sum(d_out * forward(inputs))`` with respect to the input of the same name.

    Along each of `directions` random unit directions ``v`` per input, the central difference
    ``(f(x + h v) - f(x - h v)) / 2h`` must equal ``<grad, v>`` within ``FD_RTOL · ‖grad‖``
    (plus the difference's own rounding): two forward passes per direction, so cheap enough
    for the generator to run on every gradient it stores.
    """
    values = {name: _f64(value) for name, value in inputs.items()}
    d_out = _f64(d_out)

    def objective(name: str, value: Array) -> float:
        return float(np.sum(d_out * forward(values | {name: value})))

    for name, grad in grads.items():
        grad, base = _f64(grad), values[name]
        if grad.shape != base.shape:
            raise GradientCheckError(f"gradient wrt {name}: shape {grad.shape}, not {base.shape}")
        step = FD_STEP * max(1.0, float(np.abs(base).max(initial=0.0)))
        for _ in range(directions):
            v = rng.standard_normal(base.shape)
            v /= np.linalg.norm(v)
            plus, minus = objective(name, base + step * v), objective(name, base - step * v)
            numeric, analytic = (plus - minus) / (2 * step), float(np.sum(grad * v))
            rounding = 1e-12 * (abs(plus) + abs(minus)) / step
            allowed = FD_RTOL * float(np.linalg.norm(grad)) + rounding
            if not abs(numeric - analytic) <= allowed:
                raise GradientCheckError(
                    f"gradient wrt {name}: <grad, v> = {analytic:.10g}, but the central "
                    f"difference is {numeric:.10g} (allowed difference {allowed:.2g})"
                )
