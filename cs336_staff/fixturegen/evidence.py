"""Numbers showing the reference fixtures can see the bugs they are meant to catch, and the
bars every draw of the reference model must clear (`shortfalls`; the generator redraws,
deterministically from the seed, until none is left)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from cs336_staff import oracle


def _relative_change(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def sublayer_effects(weights: dict, config: dict, ids: np.ndarray) -> Iterator[tuple[str, float]]:
    """How much the logits change when one sublayer's output is removed (its output matrix
    zeroed): a sublayer whose removal changes nothing could be wrong without a test noticing."""
    logits = oracle.transformer_lm(ids, weights, config)
    for layer in range(config["num_layers"]):
        for name in ("attn.output_proj.weight", "ffn.w2.weight"):
            key = f"layers.{layer}.{name}"
            ablated = weights | {key: np.zeros_like(weights[key])}
            yield (
                key.rsplit(".", 2)[0],
                _relative_change(oracle.transformer_lm(ids, ablated, config), logits),
            )


def first_layer_attention(weights: dict, config: dict, ids: np.ndarray) -> np.ndarray:
    """Layer 0's attention probabilities (batch, heads, seq, seq), from oracle primitives."""
    x = oracle.rmsnorm(
        oracle.embedding(weights["token_embeddings.weight"], ids), weights["layers.0.ln1.weight"]
    )
    heads, seq = config["num_heads"], ids.shape[-1]
    d_k = config["d_model"] // heads

    def project(name: str) -> np.ndarray:
        y = oracle.linear(x, weights[f"layers.0.attn.{name}.weight"])
        y = y.reshape(*ids.shape, heads, d_k).swapaxes(-2, -3)
        return oracle.rope(y, np.arange(seq), config["rope_theta"])

    scores = project("q_proj") @ project("k_proj").swapaxes(-1, -2) / np.sqrt(d_k)
    scores = np.where(np.tril(np.ones((seq, seq), dtype=bool)), scores, -np.inf)
    return oracle.softmax(scores, -1)


def attention_sharpness(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per head: mean entropy as a fraction of the uniform distribution's over the same causal
    prefix (1 = uniform), and the mean largest probability; query 0 (one key) is left out."""
    seq = probs.shape[-1]
    entropy = -np.sum(np.where(probs > 0, probs * np.log(np.where(probs > 0, probs, 1)), 0), -1)
    fraction = entropy[..., 1:] / np.log(np.arange(2, seq + 1))
    return fraction.mean(axis=(0, 2)), probs.max(-1)[..., 1:].mean(axis=(0, 2))


def gain_report(weights: dict) -> tuple[float, float]:
    """The smallest mean |g − 1| over all norm gains, and the smallest mean |g_a − g_b| between
    two different norms: both well above zero means no norm can be dropped or swapped unseen."""
    gains = {k: v for k, v in weights.items() if k.endswith("weight") and ".ln" in f".{k}"}
    from_one = min(float(np.abs(g - 1).mean()) for g in gains.values())
    apart = min(float(np.abs(a - b).mean()) for a, b in itertools.combinations(gains.values(), 2))
    return from_one, apart


# The bars, each well under what the stored draw (seed 336) shows and well over what the
# bug it guards against needs to be seen: a sublayer must move the logits (stored: 25% at
# least), layer-0 attention must be far from uniform (stored: entropy 0.24–0.32 of
# uniform), gains far from 1 and from each other (stored: 0.29, 0.31), the head untied
# (stored: cosine 0.001).
MIN_SUBLAYER_EFFECT = 0.10
MAX_ATTENTION_ENTROPY = 0.6
MIN_GAIN_DISTANCE = 0.2
MAX_HEAD_COSINE = 0.05


def _head_cosine(weights: dict) -> float:
    emb, head = weights["token_embeddings.weight"], weights["lm_head.weight"]
    return float(np.sum(emb * head) / (np.linalg.norm(emb) * np.linalg.norm(head)))


def shortfalls(weights: dict, config: dict, ids: np.ndarray) -> list[str]:
    """Every bar this draw of the reference model misses; empty when it is fit to grade on."""
    missed = [
        f"removing {name} changes the logits by only {change:.1%}"
        for name, change in sublayer_effects(weights, config, ids)
        if change < MIN_SUBLAYER_EFFECT
    ]
    fraction, _ = attention_sharpness(first_layer_attention(weights, config, ids))
    missed += [
        f"layer 0 head {h} attention is near uniform (entropy {f:.2f} of uniform)"
        for h, f in enumerate(fraction)
        if f > MAX_ATTENTION_ENTROPY
    ]
    from_one, apart = gain_report(weights)
    if min(from_one, apart) < MIN_GAIN_DISTANCE:
        missed.append(f"norm gains too alike: {from_one:.3f} from 1, {apart:.3f} apart")
    if abs(_head_cosine(weights)) > MAX_HEAD_COSINE:
        missed.append(f"lm_head resembles the embeddings (cosine {_head_cosine(weights):+.3f})")
    return missed


def report(weights: dict, config: dict, ids: np.ndarray) -> list[str]:
    lines = ["Evidence that the reference fixtures are sensitive:"]
    for name, change in sublayer_effects(weights, config, ids):
        lines.append(f"  removing {name:<18} changes the logits by {change:6.1%}")
    fraction, top = attention_sharpness(first_layer_attention(weights, config, ids))
    lines.append(
        "  layer 0 attention entropy / uniform, per head: "
        + ", ".join(f"{f:.2f}" for f in fraction)
    )
    lines.append(
        "  layer 0 mean largest attention weight, per head: " + ", ".join(f"{t:.2f}" for t in top)
    )
    from_one, apart = gain_report(weights)
    lines.append(
        f"  norm gains: min mean |g - 1| = {from_one:.3f}, "
        f"min mean |g_a - g_b| between norms = {apart:.3f}"
    )
    cosine = _head_cosine(weights)
    lines.append(f"  lm_head vs token_embeddings: cosine similarity {cosine:+.4f} (independent)")
    return lines
