"""Basic building blocks: Linear, Embedding, RMSNorm, SiLU, softmax and SwiGLU."""

import math

import torch
from einops import einsum
from torch import Tensor, nn


class Linear(nn.Module):
    """Bias-free linear map ``y = x Wᵀ``: ``(..., in) -> (..., out)``; ``weight`` is (out, in)."""

    def __init__(self, in_features: int, out_features: int, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(
            torch.empty(out_features, in_features, device=device, dtype=dtype)
        )
        std = math.sqrt(2.0 / (in_features + out_features))
        nn.init.trunc_normal_(self.weight, mean=0.0, std=std, a=-3 * std, b=3 * std)

    def forward(self, x: Tensor) -> Tensor:
        return einsum(x, self.weight, "... d_in, d_out d_in -> ... d_out")


class Embedding(nn.Module):
    """Lookup table: ids ``(...)`` -> vectors ``(..., embedding_dim)``."""

    def __init__(self, num_embeddings: int, embedding_dim: int, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(
            torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype)
        )
        nn.init.trunc_normal_(self.weight, mean=0.0, std=1.0, a=-3.0, b=3.0)

    def forward(self, token_ids: Tensor) -> Tensor:
        return self.weight[token_ids]


class RMSNorm(nn.Module):
    """Root-mean-square norm over the last dim, with gain: ``(..., d_model)`` -> same."""

    def __init__(self, d_model: int, eps: float = 1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        in_dtype = x.dtype
        x = x.to(torch.float32)
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x * inv_rms * self.weight.to(torch.float32)).to(in_dtype)


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)``, elementwise."""
    return x * torch.sigmoid(x)


def softmax(x: Tensor, dim: int) -> Tensor:
    """Numerically stable softmax along ``dim``."""
    x = x - x.max(dim=dim, keepdim=True).values
    exp = torch.exp(x)
    return exp / exp.sum(dim=dim, keepdim=True)


class SwiGLU(nn.Module):
    """``w2(silu(w1 x) * w3 x)``: ``(..., d_model)`` -> same."""

    def __init__(self, d_model: int, d_ff: int | None = None, device=None, dtype=None):
        super().__init__()
        if d_ff is None:
            d_ff = 64 * math.ceil(8 * d_model / 3 / 64)
        self.w1 = Linear(d_model, d_ff, device=device, dtype=dtype)
        self.w2 = Linear(d_ff, d_model, device=device, dtype=dtype)
        self.w3 = Linear(d_model, d_ff, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(silu(self.w1(x)) * self.w3(x))
