"""Root-mean-square layer normalisation."""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics._checks import check_last_dim, check_positive_int


class RMSNorm(nn.Module):
    """``x / sqrt(mean(x², last dim) + eps) * weight`` with a learned gain ``weight (d_model,)``.

    The statistics are computed in (at least) float32 and the result is cast back to the
    input's dtype: squaring bf16/fp16 activations of a few hundred would overflow fp16 and
    lose most of the mean's precision in bf16. Input and output ``(..., d_model)``.
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
        check_positive_int("RMSNorm", "d_model", d_model)
        if not eps >= 0:
            raise ValueError(f"RMSNorm: eps must be >= 0, got eps={eps}")
        self.d_model = d_model
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.empty(d_model, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Reset the gain to ones (the identity scale)."""
        nn.init.ones_(self.weight)

    def forward(self, x: Float[Tensor, "*batch d_model"]) -> Float[Tensor, "*batch d_model"]:
        check_last_dim("RMSNorm", "x", x, self.d_model)
        in_dtype = x.dtype
        compute_dtype = torch.promote_types(in_dtype, torch.float32)  # keeps float64 as is
        x = x.to(compute_dtype)
        inv_rms = torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + self.eps)
        return (x * inv_rms * self.weight.to(compute_dtype)).to(in_dtype)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
