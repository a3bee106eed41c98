"""The default `TransformerLM` written the way a PyTorch user would, for `make bench`.

Same architecture, parameter names and shapes as the bundled model (so one `state_dict`
loads into both), built from torch's own modules and fused functions: `nn.Embedding`,
`nn.Linear`, `nn.RMSNorm` (`F.rms_norm`), `F.scaled_dot_product_attention(is_causal=True)`,
`F.silu`, and RoPE as a complex multiply (the LLaMA reference's form, interleaved pairs).
The benchmark trains it with `F.cross_entropy` and `torch.optim.AdamW(foreach=True)`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn


def _rotate(x: Float[Tensor, "batch heads seq d_k"], cis: Tensor) -> Tensor:
    # Pairs (x[2k], x[2k+1]) as complex numbers, times exp(i·θ).
    pairs = torch.view_as_complex(x.float().unflatten(-1, (-1, 2)).contiguous())
    return torch.view_as_real(pairs * cis).flatten(-2).type_as(x)


class NativeAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.output_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: Float[Tensor, "batch seq d_model"], cis: Tensor) -> Tensor:
        def heads(t: Tensor) -> Tensor:
            return t.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)

        q = _rotate(heads(self.q_proj(x)), cis)
        k = _rotate(heads(self.k_proj(x)), cis)
        out = F.scaled_dot_product_attention(q, k, heads(self.v_proj(x)), is_causal=True)
        return self.output_proj(out.transpose(1, 2).flatten(-2))


class NativeSwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class NativeBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int) -> None:
        super().__init__()
        self.ln1 = nn.RMSNorm(d_model, eps=1e-5)
        self.attn = NativeAttention(d_model, num_heads)
        self.ln2 = nn.RMSNorm(d_model, eps=1e-5)
        self.ffn = NativeSwiGLU(d_model, d_ff)

    def forward(self, x: Tensor, cis: Tensor) -> Tensor:
        h = x + self.attn(self.ln1(x), cis)
        return h + self.ffn(self.ln2(h))


class NativeLM(nn.Module):
    """The SPEC's default LM; ``forward(ids (batch, seq)) → logits (batch, seq, vocab)``."""

    cis: Tensor

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        d_model: int,
        num_layers: int,
        num_heads: int,
        d_ff: int,
        rope_theta: float = 10000.0,
    ) -> None:
        super().__init__()
        self.token_embeddings = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            NativeBlock(d_model, num_heads, d_ff) for _ in range(num_layers)
        )
        self.ln_final = nn.RMSNorm(d_model, eps=1e-5)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        d_k = d_model // num_heads
        inv_freq = rope_theta ** -(torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
        angles = torch.outer(torch.arange(context_length, dtype=torch.float64), inv_freq)
        cis = torch.polar(torch.ones_like(angles), angles).to(torch.complex64)
        self.register_buffer("cis", cis, persistent=False)

    def forward(self, in_indices: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch seq vocab"]:
        cis = self.cis[: in_indices.shape[-1]]
        x = self.token_embeddings(in_indices)
        for layer in self.layers:
            x = layer(x, cis)
        return self.lm_head(self.ln_final(x))
