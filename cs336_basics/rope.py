"""Rotary positional embedding (RoPE), adjacent-pair convention by default."""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from cs336_basics._checks import (
    check_broadcastable_to,
    check_index_range,
    check_integer_tensor,
    check_last_dim,
    check_min_ndim,
    check_positive_int,
)

ROPE_PAIRINGS = ("interleaved", "half")


class RotaryPositionalEmbedding(nn.Module):
    """Rotate each pair ``(x[2k], x[2k+1])`` at position ``i`` by ``θ_{i,k} = i · Θ^(-2k/d_k)``.

    ``(a, b) → (a cos θ - b sin θ, a sin θ + b cos θ)``. This is the interleaved pairing
    of the RoFormer paper and Meta's LLaMA code. ``pairing="half"`` selects the "rotate half"
    pairing ``(a, b) = (x[k], x[k + d_k/2])`` of Hugging Face's LLaMA port (same angles); the
    two are different functions, equal only up to a permutation of the dims.

    cos/sin tables for positions ``0 … max_seq_len-1`` are precomputed (angles in float64,
    so large positions stay exact) and registered as non-persistent buffers: they follow
    ``.to(device)`` but never appear in ``state_dict``. They are stored in float32 (or
    float64 when ``dtype`` asks for it); the rotation is computed in the wider of that and
    ``x``'s dtype, and cast back to ``x``'s dtype.

    ``forward(x, token_positions)``: ``x (..., seq, d_k)``; ``token_positions`` an integer
    tensor broadcastable to ``x``'s leading dims ``(..., seq)``, any values in
    ``[0, max_seq_len)`` (not necessarily ``arange``). ``None`` means ``0 … seq-1``.
    """

    cos_cached: Tensor
    sin_cached: Tensor

    def __init__(
        self,
        theta: float,
        d_k: int,
        max_seq_len: int,
        pairing: str = "interleaved",
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("RotaryPositionalEmbedding", "d_k", d_k)
        if d_k % 2 != 0:
            raise ValueError(
                f"RotaryPositionalEmbedding: d_k must be even (dims are rotated in pairs), "
                f"got d_k={d_k}"
            )
        check_positive_int("RotaryPositionalEmbedding", "max_seq_len", max_seq_len)
        if pairing not in ROPE_PAIRINGS:
            raise ValueError(
                f"RotaryPositionalEmbedding: pairing must be one of {ROPE_PAIRINGS}, "
                f"got pairing={pairing!r}"
            )
        if not theta > 0:
            raise ValueError(
                f"RotaryPositionalEmbedding: theta must be positive, got theta={theta}"
            )
        self.theta = float(theta)
        self.d_k = d_k
        self.max_seq_len = max_seq_len
        self.pairing = pairing

        table_dtype = torch.promote_types(dtype or torch.float32, torch.float32)
        # Computed on the CPU and then moved: the same numbers on every device, and no meta
        # kernels on the meta device, whose first use (arange) imports torch._refs for 7 s.
        exponents = torch.arange(0, d_k, 2, dtype=torch.float64) / d_k
        inv_freq = self.theta**-exponents  # (d_k/2,): Θ^(-2k/d_k)
        positions = torch.arange(max_seq_len, dtype=torch.float64)
        angles = torch.outer(positions, inv_freq)  # (max_seq_len, d_k/2)
        table = {"device": device, "dtype": table_dtype}
        self.register_buffer("cos_cached", angles.cos().to(**table), persistent=False)
        self.register_buffer("sin_cached", angles.sin().to(**table), persistent=False)

    def forward(
        self,
        x: Float[Tensor, "*batch seq d_k"],
        token_positions: Int[Tensor, "... seq"] | None = None,
    ) -> Float[Tensor, "*batch seq d_k"]:
        owner = "RotaryPositionalEmbedding"
        check_last_dim(owner, "x", x, self.d_k)
        check_min_ndim(owner, "x", x, 2, "(..., seq, d_k)")
        seq_len = x.shape[-2]
        if token_positions is None:
            # Positions 0 … seq-1: a host-side length check and a slice, no gather or sync.
            if seq_len > self.max_seq_len:
                raise IndexError(
                    f"{owner}: sequence length {seq_len} exceeds max_seq_len={self.max_seq_len}"
                )
            cos, sin = self.cos_cached[:seq_len], self.sin_cached[:seq_len]
        else:
            check_integer_tensor(owner, "token_positions", token_positions)
            check_broadcastable_to(
                owner,
                "token_positions",
                token_positions,
                x.shape[:-1],
                "(..., seq), x's leading dims",
            )
            check_index_range(owner, "token_positions", token_positions, self.max_seq_len)
            index = token_positions.long()
            cos, sin = self.cos_cached[index], self.sin_cached[index]

        compute_dtype = torch.promote_types(x.dtype, cos.dtype)
        cos, sin = cos.to(compute_dtype), sin.to(compute_dtype)
        x_c = x.to(compute_dtype)
        half = self.d_k // 2
        if self.pairing == "interleaved":
            # Adjacent pairs are complex numbers a + ib in memory, and turning one by θ is a
            # product with cos θ + i sin θ: (a cos θ - b sin θ) + i(a sin θ + b cos θ). One
            # complex multiply reads each pair once (and its backward another); the rotation
            # written out over stride-2 halves took five to seven times as long. The copy
            # gives `view_as_complex` the layout it needs (pairs adjacent, even offsets)
            # whatever x's strides: attention's heads are a strided view anyway.
            pairs = x_c.unflatten(-1, (half, 2)).clone(memory_format=torch.contiguous_format)
            turned = torch.view_as_complex(pairs) * torch.complex(cos, sin)
            return torch.view_as_real(turned).flatten(-2).to(x.dtype)
        # Half pairs are the two contiguous halves of the last dim: rotated as written.
        a, b = x_c.unflatten(-1, (2, half)).unbind(-2)
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1).to(x.dtype)

    def extra_repr(self) -> str:
        return (
            f"theta={self.theta}, d_k={self.d_k}, max_seq_len={self.max_seq_len}, "
            f"pairing={self.pairing!r}"
        )
