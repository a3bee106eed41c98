"""RoPE's forward run under `torch.no_grad()` ("it has no parameters, so it needs no
autograd"): the same output, detached from its input, so nothing below the rotation would
learn. In the module, where training meets it; an adapter that wraps a correct module in
no_grad is glue, and the backward cases look past it."""

import torch

from cs336_basics import RotaryPositionalEmbedding
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"rope"})


class RoPEWithoutGrad(RotaryPositionalEmbedding):
    @torch.no_grad()
    def forward(self, x: torch.Tensor, token_positions: torch.Tensor) -> torch.Tensor:
        return super().forward(x, token_positions)


def run_rope(d_k, theta, max_seq_len, in_query_or_key, token_positions):
    rope = RoPEWithoutGrad(theta, d_k, max_seq_len, device=in_query_or_key.device)
    return rope(in_query_or_key, token_positions)
