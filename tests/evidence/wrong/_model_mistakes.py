"""A block and a language model whose parts are right but put together wrongly, one switch
at a time: the attention, RMSNorm and SwiGLU of the small functional Transformer beside this
file (`_mistakes`), joined as `Assembly` says. With every switch off they are correct."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from tests.evidence.wrong._mistakes import Mistakes, mha, rmsnorm, swiglu


@dataclass(frozen=True)
class Assembly:
    attn_residual: bool = True  # False: h = attn(ln1(x))
    ffn_residual: bool = True  # False: out = ffn(ln2(h))
    ffn_reads: str = "h"  # "x": ln2 of the block's input; "attn": of the attention's output
    rope: bool = True
    norm_gains_swapped: bool = False  # ln1 normalises with ln2's gain and ln2 with ln1's
    embeddings_scaled: bool = False  # token embeddings times √d_model
    final_norms: int = 1
    output: str = "logits"  # "probabilities", "log_probabilities"
    chained: bool = True  # False: every block reads the embeddings
    norm_on_sublayer_output: bool = False  # h = x + ln1(attn(x)), out = h + ln2(ffn(h))
    norm_gain_added: bool = False  # every norm is x / RMS(x) + g (`rmsnorm_gain_added`)
    ln1_gain_loaded: bool = True  # False: ln1 keeps a gain of ones, its weight never loaded
    causal: bool = True  # False: the block's attention has no causal mask
    ffn_first: bool = False  # g = x + ffn(ln2(x)), out = g + attn(ln1(g))


def rmsnorm_gain_added(x: Tensor, gain: Tensor, eps: float = 1e-5) -> Tensor:
    """RMSNorm adding its gain to x / RMS(x) rather than multiplying by it."""
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) + gain).to(x.dtype)


def block(x: Tensor, w: dict[str, Tensor], num_heads: int, theta: float, a: Assembly) -> Tensor:
    """`w` is named relative to the block: `ln1.weight`, `attn.q_proj.weight`, `ffn.w1.weight`."""
    attn = {k.removeprefix("attn."): v for k, v in w.items() if k.startswith("attn.")}
    ln1, ln2 = w["ln1.weight"], w["ln2.weight"]
    if a.norm_gains_swapped:
        ln1, ln2 = ln2, ln1
    if not a.ln1_gain_loaded:
        ln1 = torch.ones_like(ln1)
    norm = rmsnorm_gain_added if a.norm_gain_added else rmsnorm
    ffn = (w["ffn.w1.weight"], w["ffn.w2.weight"], w["ffn.w3.weight"])
    theta_used = theta if a.rope else None
    masked = Mistakes(causal=a.causal)
    if a.norm_on_sublayer_output:
        h = x + norm(mha(x, attn, num_heads, theta_used, m=masked), ln1)
        return h + norm(swiglu(h, *ffn), ln2)
    if a.ffn_first:
        g = x + swiglu(norm(x, ln2), *ffn)
        return g + mha(norm(g, ln1), attn, num_heads, theta_used, m=masked)
    out = mha(norm(x, ln1), attn, num_heads, theta_used, m=masked)
    h = x + out if a.attn_residual else out
    reads = {"h": h, "x": x, "attn": out}[a.ffn_reads]
    f = swiglu(norm(reads, ln2), *ffn)
    return h + f if a.ffn_residual else f


def lm(
    ids: Tensor,
    w: dict[str, Tensor],
    sizes: dict[str, int | float],
    a: Assembly,
) -> Tensor:
    if ids.shape[-1] > sizes["context_length"]:
        raise ValueError(f"sequence length {ids.shape[-1]} exceeds the context length")
    x = w["token_embeddings.weight"][ids]
    if a.embeddings_scaled:
        x = x * math.sqrt(sizes["d_model"])
    embedded = x
    for i in range(sizes["num_layers"]):
        prefix = f"layers.{i}."
        layer = {k.removeprefix(prefix): v for k, v in w.items() if k.startswith(prefix)}
        x = block(x if a.chained else embedded, layer, sizes["num_heads"], sizes["rope_theta"], a)
    for _ in range(a.final_norms):
        x = (rmsnorm_gain_added if a.norm_gain_added else rmsnorm)(x, w["ln_final.weight"])
    logits = x @ w["lm_head.weight"].T
    if a.output == "probabilities":
        return torch.softmax(logits, dim=-1)
    if a.output == "log_probabilities":
        return torch.log_softmax(logits, dim=-1)
    return logits


class AssembledAdapters:
    """`run_transformer_block` and `run_transformer_lm` put together as `assembly` says."""

    def __init__(self, assembly: Assembly):
        self.a = assembly

    def run_transformer_block(
        self, d_model, num_heads, d_ff, max_seq_len, theta, weights, in_features
    ):
        return block(in_features, weights, num_heads, theta, self.a)

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
        sizes = {
            "context_length": context_length,
            "d_model": d_model,
            "num_layers": num_layers,
            "num_heads": num_heads,
            "rope_theta": rope_theta,
        }
        return lm(in_indices, weights, sizes, self.a)
