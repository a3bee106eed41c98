"""Scaled dot-product attention computed a query at a time, in Python loops over every batch
row, head and position: the right output, at a cost that grows with the number of positions
(and of heads), far over `budgets.FAR` times the bundled implementation's at the working size
(4 rows, 8 heads, 128 positions: 4,096 small products a call). Its message names the
positions loop (`budgets.model_cause`): a small call costs many times more with 16 times the
positions. (A loop over the positions alone, with the batch and heads kept whole, cost 3 to
6 times the bundled one: too near `FAR` to say one way or the other on every host.)"""

import torch

from cs336_basics import scaled_dot_product_attention
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"scaled_dot_product_attention"})
NAMED = "a Python loop over the positions"


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    *lead, queries, _ = Q.shape
    if mask is not None:
        mask = mask.expand(*lead, queries, K.shape[-2]).reshape(-1, queries, K.shape[-2])
    q, k, v = (t.reshape(-1, *t.shape[-2:]) for t in (Q, K, V))
    out = torch.empty(q.shape[0], queries, v.shape[-1], dtype=Q.dtype)
    for row in range(q.shape[0]):
        for i in range(queries):
            row_mask = None if mask is None else mask[row, i : i + 1]
            out[row, i : i + 1] = scaled_dot_product_attention(
                q[row, i : i + 1], k[row], v[row], row_mask
            )
    return out.reshape(*lead, queries, v.shape[-1])
