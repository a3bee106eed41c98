"""The bundled LM and block as modules, with one block changed: the wrong modules beside this
file use it for `get_transformer_lm` / `get_transformer_block`, and (when the change alters
the output) for `run_transformer_lm` / `run_transformer_block`, which run that same module.

Each change takes one block and the sizes it was built with, and returns the block to use
(itself, changed, or a replacement); `MistakenModules` applies it to the blocks of the layers
it names (a lone block counts as layer 0).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import torch
from torch import Tensor, nn

from cs336_basics import MultiHeadSelfAttention, RMSNorm, SwiGLU, TransformerBlock, TransformerLM
from tests.evidence.wrong._mistakes import Mistakes, mha

Change = Callable[[TransformerBlock, dict[str, Any]], TransformerBlock]
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "output_proj")


class _NonCausalAttention(MultiHeadSelfAttention):
    """Every query attends every key, the future included."""

    def __init__(self, d_model: int, num_heads: int, max_seq_len: int, theta: float):
        super().__init__(d_model, num_heads, max_seq_len=max_seq_len, theta=theta)
        self.theta = theta

    def forward(self, x: Tensor, token_positions: Tensor | None = None) -> Tensor:
        weights = {f"{name}.weight": getattr(self, name).weight for name in PROJECTIONS}
        return mha(x, weights, self.num_heads, self.theta, token_positions, Mistakes(causal=False))


class _SwappedSwiGLU(SwiGLU):
    """``w2(silu(w3 x) * w1 x)``: the gate and the value trade places."""

    def forward(self, x: Tensor) -> Tensor:
        a = self.w3(x)
        return self.w2(a * torch.sigmoid(a) * self.w1(x))


class _SiLUWithoutValue(SwiGLU):
    """``w2(silu(w1 x))``: the SiLU ablation's FFN, with w3 held but never used."""

    def forward(self, x: Tensor) -> Tensor:
        a = self.w1(x)
        return self.w2(a * torch.sigmoid(a))


class _DetachedRMSNorm(RMSNorm):
    """The right values, but the normaliser is a constant to autograd: the input's gradient
    loses its term through the mean of squares."""

    def forward(self, x: Tensor) -> Tensor:
        x32 = x.float()
        inv_rms = torch.rsqrt(x32.square().mean(dim=-1, keepdim=True) + self.eps).detach()
        return (x32 * inv_rms * self.weight).to(x.dtype)


class _BlockWithoutAttentionResidual(TransformerBlock):
    """``h = attn(ln1(x))``: the attention's output replaces the residual stream."""

    def forward(self, x: Tensor, token_positions: Tensor | None = None) -> Tensor:
        h = self.attn(self.ln1(x), token_positions)
        return h + self.ffn(self.ln2(h))


def attention_not_causal(block: TransformerBlock, sizes: dict[str, Any]) -> TransformerBlock:
    block.attn = _NonCausalAttention(
        sizes["d_model"], sizes["num_heads"], sizes["max_seq_len"], sizes["theta"]
    )
    return block


def attention_residual_dropped(block: TransformerBlock, sizes: dict[str, Any]) -> TransformerBlock:
    return _BlockWithoutAttentionResidual(**sizes)


def ffn_gate_and_value_swapped(block: TransformerBlock, sizes: dict[str, Any]) -> TransformerBlock:
    block.ffn = _SwappedSwiGLU(sizes["d_model"], sizes["d_ff"])
    return block


def ffn_without_w3(block: TransformerBlock, sizes: dict[str, Any]) -> TransformerBlock:
    block.ffn = _SiLUWithoutValue(sizes["d_model"], sizes["d_ff"])
    return block


def norms_detached(block: TransformerBlock, sizes: dict[str, Any]) -> TransformerBlock:
    block.ln1, block.ln2 = _DetachedRMSNorm(sizes["d_model"]), _DetachedRMSNorm(sizes["d_model"])
    return block


def query_weight_plain_tensor(block: TransformerBlock, sizes: dict[str, Any]) -> TransformerBlock:
    projection = block.attn.q_proj
    weight = projection.weight.detach().clone()
    del projection.weight  # unregistered: what follows is a plain attribute
    projection.weight = weight
    return block


def rope_tables_persistent(block: TransformerBlock, sizes: dict[str, Any]) -> TransformerBlock:
    rope = block.attn.rope
    for name, table in list(rope.named_buffers(recurse=False)):
        rope.register_buffer(name, table, persistent=True)
    return block


def rope_tables_plain(block: TransformerBlock, sizes: dict[str, Any]) -> TransformerBlock:
    rope = block.attn.rope
    for name, table in list(rope.named_buffers(recurse=False)):
        delattr(rope, name)
        setattr(rope, name, table)
    return block


def extra_parameter(block: TransformerBlock, sizes: dict[str, Any]) -> TransformerBlock:
    block.attn.register_parameter("temperature", nn.Parameter(torch.ones(())))
    return block


class MistakenModules:
    """`get_*` and `run_*` adapters of the bundled LM and block, with `change` applied to the
    blocks in `layers` (None: every one)."""

    def __init__(self, change: Change, layers: Collection[int] | None = None):
        self.change = change
        self.layers = layers

    def _changed(
        self, block: TransformerBlock, layer: int, sizes: dict[str, Any]
    ) -> TransformerBlock:
        return self.change(block, sizes) if self.layers is None or layer in self.layers else block

    def get_transformer_lm(
        self, vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta
    ):
        model = TransformerLM(
            vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta
        )
        sizes = {
            "d_model": d_model,
            "num_heads": num_heads,
            "d_ff": d_ff,
            "max_seq_len": context_length,
            "theta": rope_theta,
        }
        for i, block in enumerate(model.layers):
            model.layers[i] = self._changed(block, i, sizes)
        return model

    def run_transformer_lm(
        self,
        vocab_size,
        context_length,
        d_model,
        num_layers,
        num_heads,
        d_ff,
        rope_theta,
        weights,
        in_indices,
    ):
        model = self.get_transformer_lm(
            vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta
        )
        model.load_state_dict(weights)
        return model(in_indices)

    def get_transformer_block(self, d_model, num_heads, d_ff, max_seq_len, theta):
        block = TransformerBlock(d_model, num_heads, d_ff, max_seq_len, theta)
        sizes = {
            "d_model": d_model,
            "num_heads": num_heads,
            "d_ff": d_ff,
            "max_seq_len": max_seq_len,
            "theta": theta,
        }
        return self._changed(block, 0, sizes)

    def run_transformer_block(
        self, d_model, num_heads, d_ff, max_seq_len, theta, weights, in_features
    ):
        block = self.get_transformer_block(d_model, num_heads, d_ff, max_seq_len, theta)
        block.load_state_dict(weights)
        return block(in_features)
