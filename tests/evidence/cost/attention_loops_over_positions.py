"""Scaled dot-product attention computed a query at a time in a Python loop: the right
output, at a cost that grows with the number of positions, but less than `budgets.FAR` times
the bundled implementation's at the working size (128 positions: 3.2 times, quiet 2-core
host, 2026-11-28): its cost is reported (the test's reading, the class report's costliest),
not failed. Where it is far over, the message names the positions loop
(`budgets.model_cause`)."""

import torch

from cs336_basics import scaled_dot_product_attention
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset()
NAMED = ""


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    rows = []
    for i in range(Q.shape[-2]):
        row_mask = None if mask is None else mask[..., i : i + 1, :]
        rows.append(scaled_dot_product_attention(Q[..., i : i + 1, :], K, V, row_mask))
    return torch.cat(rows, dim=-2)
