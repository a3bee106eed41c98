"""Multi-head self-attention computed a head at a time in a Python loop: the right output,
at a cost that grows with the number of heads, but less than `budgets.FAR` times the bundled
implementation's at the working size (8 heads, each a matrix product of its own): its cost
is reported (the test's reading, the class report's costliest), not failed."""

import torch

from cs336_basics import scaled_dot_product_attention
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset()
NAMED = ""


def run_multihead_self_attention(
    d_model, num_heads, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, in_features
):
    d_k = d_model // num_heads
    seq = in_features.shape[-2]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=in_features.device).tril()
    heads = []
    for head in range(num_heads):
        rows = slice(head * d_k, (head + 1) * d_k)
        q, k, v = (in_features @ w[rows].T for w in (q_proj_weight, k_proj_weight, v_proj_weight))
        heads.append(scaled_dot_product_attention(q, k, v, causal))
    return torch.cat(heads, dim=-1) @ o_proj_weight.T
