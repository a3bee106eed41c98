"""Layer normalisation (GPT-2's norm)."""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics._checks import check_last_dim, check_positive_int


class LayerNorm(nn.Module):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dim, ``(..., d_model)``.

    ``var`` is the biased variance (divide by ``d_model``), as in ``torch.nn.LayerNorm`` and
    GPT-2. ``weight`` (ones) and ``bias`` (zeros) are both ``(d_model,)`` and always present:
    a model's ``bias`` option is about its projection matrices, not its norms. Like
    :class:`~cs336_basics.RMSNorm`, the statistics are computed in (at least) float32 and the
    result is cast back to the input's dtype.
    """

    def __init__(
        self,
        d_model: int,
        eps: float = 1e-5,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("LayerNorm", "d_model", d_model)
        if not eps >= 0:
            raise ValueError(f"LayerNorm: eps must be >= 0, got eps={eps}")
        self.d_model = d_model
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.empty(d_model, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.empty(d_model, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Reset to the identity map: gain ones, shift zeros."""
        nn.init.ones_(self.weight)
        nn.init.zeros_(self.bias)

    def forward(self, x: Float[Tensor, "*batch d_model"]) -> Float[Tensor, "*batch d_model"]:
        check_last_dim("LayerNorm", "x", x, self.d_model)
        in_dtype = x.dtype
        compute_dtype = torch.promote_types(in_dtype, torch.float32)  # keeps float64 as is
        x = x.to(compute_dtype)
        # Centre first and average the squares of the centred values: E[x²] - E[x]² would
        # cancel catastrophically for rows whose mean is large next to their spread.
        centred = x - x.mean(dim=-1, keepdim=True)
        inv_std = torch.rsqrt(centred.square().mean(dim=-1, keepdim=True) + self.eps)
        y = centred * inv_std * self.weight.to(compute_dtype) + self.bias.to(compute_dtype)
        return y.to(in_dtype)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
