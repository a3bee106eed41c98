"""Token embedding lookup table."""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from cs336_basics._checks import check_index_range, check_integer_tensor, check_positive_int


class Embedding(nn.Module):
    """Row lookup ``weight[token_ids]``, ``weight`` of shape ``(num_embeddings, embedding_dim)``.

    ``token_ids`` may have any shape; the output appends ``embedding_dim``. Ids outside
    ``[0, num_embeddings)`` raise IndexError up front rather than a device-side assert
    (or, for negative ids, silently wrapping around). Init: truncated normal, std 1, cut at ±3.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("Embedding", "num_embeddings", num_embeddings)
        check_positive_int("Embedding", "embedding_dim", embedding_dim)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.weight = nn.Parameter(
            torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype)
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw ``weight`` from a standard normal truncated at ±3."""
        if self.weight.is_meta:
            # No values to draw, and torch's meta erfinv_ would import torch._dynamo (1 s).
            return
        nn.init.trunc_normal_(self.weight, mean=0.0, std=1.0, a=-3.0, b=3.0)

    def forward(self, token_ids: Int[Tensor, " *batch"]) -> Float[Tensor, "*batch d_model"]:
        check_integer_tensor("Embedding", "token_ids", token_ids)
        check_index_range("Embedding", "token_ids", token_ids, self.num_embeddings)
        # uint8 index tensors would be read as boolean masks; int64 makes every integer
        # dtype mean "row index" (and is a no-op for the usual int64 ids).
        return self.weight[token_ids.long()]

    def extra_repr(self) -> str:
        return f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}"
