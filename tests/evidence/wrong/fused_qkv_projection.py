"""A control, not a mistake: multi-head self-attention whose module keeps q, k and v as one
fused parameter (nanoGPT's `c_attn`, stored for x @ W) and the output projection as given.

Correct in another style, it must pass every family: the weights' gradients are found in
the block of the fused parameter that holds each projection's values."""

import torch
from einops import rearrange
from torch import nn

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset()


class _FusedAttention(nn.Module):
    def __init__(self, q, k, v, o, num_heads):
        super().__init__()
        self.qkv = nn.Parameter(torch.cat([q, k, v]).T.clone())  # (d_model, 3·d_model)
        self.o = nn.Parameter(o.clone())
        self.num_heads = num_heads

    def forward(self, x):
        q, k, v = (x @ self.qkv).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "... s (h d) -> ... h s d", h=self.num_heads) for t in (q, k, v))
        seq = x.shape[-2]
        causal = torch.ones(seq, seq, dtype=torch.bool, device=x.device).tril()
        scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
        weights = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        return rearrange(weights @ v, "... h s d -> ... s (h d)") @ self.o.T


def run_multihead_self_attention(
    d_model, num_heads, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, in_features
):
    module = _FusedAttention(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads)
    return module(in_features)
