"""Adapters that compute nothing: each answers every call with one trivial kind of value.

A submission written to collect points without implementing anything returns its inputs
unchanged, zeros, a constant, uniform or one-hot rows, takes optimizer steps that change
nothing, or raises. `adapters(kind)` is one such module's functions, for `KINDS`; the
modules beside this file are one kind each. The meta-test grades them all and requires 0
points in every family (`tests/meta/test_degenerate.py`).

Tensor answers keep the autograd graph of a float input (`x * 0 + value`), so a backward
test whose expected gradient is itself trivial sees a gradient, as a cheat would arrange.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

KINDS = ("zeros", "ones", "identity", "uniform", "one_hot", "raising")


class Degenerate(RuntimeError):
    """What the `raising` kind raises: an adapter that fails without computing."""


def _filled(like: Tensor, shape: tuple[int, ...], value: float, dtype: torch.dtype) -> Tensor:
    """A tensor of `shape` holding `value`, joined to `like`'s graph when it has one."""
    out = torch.full(shape, value, dtype=dtype, device=like.device)
    if like.is_floating_point():
        out = out + like.sum() * 0
    return out


def _rows(x: Tensor, kind: str, dim: int = -1) -> Tensor:
    """`x`'s shape with trivial rows along `dim`: uniform (1/n) or one-hot at the argmax."""
    if kind == "uniform":
        return x * 0 + 1.0 / x.shape[dim]
    hot = torch.nn.functional.one_hot(x.argmax(dim).movedim(-1, -1), x.shape[dim])
    return x * 0 + hot.movedim(-1, dim).to(x.dtype)


def _tensor(kind: str, x: Tensor, shape: tuple[int, ...], dtype: torch.dtype) -> Tensor:
    """The trivial answer of `kind` for an output of `shape`, `x` the call's main input."""
    if kind == "identity" and tuple(x.shape) == shape and x.dtype == dtype:
        return x
    if kind in ("uniform", "one_hot") and shape and x.is_floating_point():
        if tuple(x.shape) == shape:
            return _rows(x, kind)
        return _filled(x, shape, 1.0 / shape[-1], dtype)
    return _filled(x, shape, 1.0 if kind == "ones" else 0.0, dtype)


def _scalar(kind: str, value: float) -> float:
    return {"zeros": 0.0, "ones": 1.0}.get(kind, value)


class _Still(torch.optim.Optimizer):
    """An optimizer whose steps change nothing."""

    def __init__(self, params, lr: float = 1e-3, **kwargs: Any):
        super().__init__(params, {"lr": lr, **kwargs})

    def step(self, closure=None):
        return None if closure is None else closure()


class _Tokenizer:
    """Encodes to nothing (or to single bytes, for `identity`) and decodes to nothing."""

    def __init__(self, kind: str, vocab: dict[int, bytes]):
        self.kind = kind
        self.byte_ids = {v: k for k, v in vocab.items() if len(v) == 1}

    def encode(self, text: str) -> list[int]:
        if self.kind != "identity":
            return []
        return [self.byte_ids.get(bytes([b]), 0) for b in text.encode("utf-8")]

    def encode_iterable(self, iterable):
        for text in iterable:
            yield from self.encode(text)

    def decode(self, ids: list[int]) -> str:
        return ""


def adapters(kind: str) -> dict[str, Callable[..., Any]]:
    """Every adapter of upstream's handout (and this project's), answering as `kind` does."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")

    def out(x: Tensor, *tail: int, like: Tensor | None = None) -> Tensor:
        """The answer for an output of `x`'s leading shape plus `tail` (or `x`'s shape)."""
        shape = (*x.shape, *tail) if tail else tuple(x.shape)
        dtype = like.dtype if like is not None else x.dtype
        if kind == "raising":
            raise Degenerate("computes nothing")
        return _tensor(kind, x if like is None else like, shape, dtype)

    def model_out(weights: dict[str, Tensor], in_indices: Tensor, vocab_size: int) -> Tensor:
        embeddings = weights["token_embeddings.weight"]
        if kind == "raising":
            raise Degenerate("computes nothing")
        return _filled(embeddings, (*in_indices.shape, vocab_size), _scalar(kind, 0.0),
                       embeddings.dtype)  # fmt: skip

    def nothing(*args: Any, **kwargs: Any) -> None:
        if kind == "raising":
            raise Degenerate("computes nothing")

    def run_linear(d_in, d_out, weights, in_features):
        if kind == "identity" and d_in == d_out:
            return in_features
        return out(in_features[..., 0], d_out, like=in_features)

    def run_embedding(vocab_size, d_model, weights, token_ids):
        return out(token_ids, d_model, like=weights)

    def run_swiglu(d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features):
        return out(in_features)

    def run_scaled_dot_product_attention(Q, K, V, mask=None):
        if kind in ("uniform", "one_hot"):  # attention weights of that kind, then the values
            weights = _rows(Q @ K.transpose(-1, -2), kind)
            return weights @ V
        if kind == "identity" and Q.shape[-2] == V.shape[-2]:
            return V
        return out(Q[..., 0], V.shape[-1], like=V)

    def run_multihead_self_attention(d_model, num_heads, q_proj_weight, k_proj_weight,
                                     v_proj_weight, o_proj_weight, in_features):  # fmt: skip
        return out(in_features)

    def run_multihead_self_attention_with_rope(d_model, num_heads, max_seq_len, theta,
                                               q_proj_weight, k_proj_weight, v_proj_weight,
                                               o_proj_weight, in_features,
                                               token_positions=None):  # fmt: skip
        return out(in_features)

    def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
        return out(in_query_or_key)

    def run_transformer_block(d_model, num_heads, d_ff, max_seq_len, theta, weights,
                              in_features):  # fmt: skip
        return out(in_features)

    def run_transformer_lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff,
                           rope_theta, weights, in_indices):  # fmt: skip
        return model_out(weights, in_indices, vocab_size)

    def run_transformer_lm_from_config(config, weights, in_indices):
        return model_out(weights, in_indices, config["vocab_size"])

    def run_rmsnorm(d_model, eps, weights, in_features):
        return out(in_features)

    def run_layernorm(d_model, eps, weights, biases, in_features):
        return out(in_features)

    def run_silu(in_features):
        return out(in_features)

    def run_gelu(in_features, approximate="none"):
        return out(in_features)

    def run_softmax(in_features, dim):
        if kind in ("uniform", "one_hot"):
            return _rows(in_features, kind, dim)
        return out(in_features)

    def run_positionwise_feedforward(d_model, d_ff, weights, in_features):
        return out(in_features)

    def run_cross_entropy(inputs, targets):
        if kind == "raising":
            raise Degenerate("computes nothing")
        # Uniform predictions cost log(vocab) per position; one-hot ones at the target, 0.
        loss = {"ones": 1.0, "uniform": math.log(inputs.shape[-1])}.get(kind, 0.0)
        return _filled(inputs, (), loss, inputs.dtype)

    def run_gradient_clipping(parameters, max_l2_norm):
        nothing()

    def get_adamw_cls():
        nothing()
        return _Still

    def run_get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters,
                                   cosine_cycle_iters):  # fmt: skip
        nothing()
        if kind == "identity":
            return max_learning_rate
        if kind in ("uniform", "one_hot"):
            return min_learning_rate
        return _scalar(kind, 0.0)

    def run_get_batch(dataset, batch_size, context_length, device):
        nothing()
        data = torch.as_tensor(dataset[: context_length + 1]).long().to(device)
        if kind == "identity":  # the first window, every time: no sampling at all
            x, y = data[:-1], data[1:]
            return x.expand(batch_size, -1).clone(), y.expand(batch_size, -1).clone()
        zeros = torch.zeros(batch_size, context_length, dtype=torch.long, device=device)
        return zeros, zeros.clone()

    def run_save_checkpoint(model, optimizer, iteration, out):
        nothing()

    def run_load_checkpoint(src, model, optimizer):
        nothing()
        return int(_scalar(kind, 0.0))

    def run_sample_next_token(logits, temperature, top_p, seed):
        nothing()
        if kind == "one_hot":  # the most likely token, whatever the temperature and top_p
            return logits.argmax(-1)
        return torch.zeros(logits.shape[:-1], dtype=torch.long, device=logits.device)

    def run_generate(vocab_size, context_length, d_model, num_layers, num_heads, d_ff,
                     rope_theta, weights, prompt, max_new_tokens, temperature, top_p,
                     end_of_text_id, seed):  # fmt: skip
        nothing()
        if kind == "identity" and end_of_text_id is not None:  # stops at once
            return torch.tensor([end_of_text_id], dtype=torch.long, device=prompt.device)
        return torch.zeros(max_new_tokens, dtype=torch.long, device=prompt.device)

    def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
        nothing()
        vocab = {i: bytes([i]) for i in range(256)}
        for token in special_tokens:
            vocab[len(vocab)] = token.encode("utf-8")
        return vocab, []

    def get_tokenizer(vocab, merges, special_tokens=None):
        nothing()
        return _Tokenizer(kind, vocab)

    def get_transformer_lm(*args, **kwargs):
        raise NotImplementedError

    def get_transformer_block(*args, **kwargs):
        raise NotImplementedError

    return {name: value for name, value in locals().items() if name.startswith(("run_", "get_"))}
