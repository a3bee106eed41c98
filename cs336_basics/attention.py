"""Scaled dot-product attention."""

from __future__ import annotations

import math

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from cs336_basics._checks import check_broadcastable_to, check_min_ndim
from cs336_basics.dropout import dropout
from cs336_basics.softmax import masked_softmax, softmax

_OWNER = "scaled_dot_product_attention"


def scaled_dot_product_attention(
    Q: Float[Tensor, "... n d_k"],
    K: Float[Tensor, "... m d_k"],
    V: Float[Tensor, "... m d_v"],
    mask: Bool[Tensor, "... n m"] | None = None,
    dropout_p: float = 0.0,
) -> Float[Tensor, "... n d_v"]:
    """``softmax(Q Kᵀ / sqrt(d_k), masked) V`` over any leading (batch, head, …) dims.

    ``n`` queries may differ from ``m`` keys and ``d_v`` from ``d_k``; leading dims
    broadcast as in ``torch.matmul``. ``mask`` is boolean, broadcastable to ``(..., n, m)``,
    ``True`` meaning "may attend". A query whose whole row is masked has nothing to
    average over and gets an all-zero output rather than the NaN of a ``-inf``-only softmax.
    ``dropout_p`` drops attention probabilities (after the softmax, so a kept row is not
    renormalised); like ``torch.nn.functional.scaled_dot_product_attention`` it applies
    whenever it is nonzero, so a module passes 0 in evaluation mode.
    """
    check_min_ndim(_OWNER, "Q", Q, 2, "(..., n, d_k)")
    check_min_ndim(_OWNER, "K", K, 2, "(..., m, d_k)")
    check_min_ndim(_OWNER, "V", V, 2, "(..., m, d_v)")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            f"{_OWNER}: Q and K must share their last dim d_k, "
            f"got Q.shape={tuple(Q.shape)} and K.shape={tuple(K.shape)}"
        )
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"{_OWNER}: K and V must have the same number of keys (dim -2), "
            f"got K.shape={tuple(K.shape)} and V.shape={tuple(V.shape)}"
        )

    # Scaling Q (n·d_k products) rather than the scores (n·m) is the same math, cheaper.
    scores = (Q * (1.0 / math.sqrt(Q.shape[-1]))) @ K.transpose(-2, -1)  # (..., n, m)
    if mask is None:
        return dropout(softmax(scores, dim=-1), dropout_p) @ V

    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(f"{_OWNER}: mask must be a bool tensor (True = may attend), got {got}")
    check_broadcastable_to(_OWNER, "mask", mask, scores.shape, "(..., n, m), the score shape")
    return dropout(masked_softmax(scores, mask, dim=-1), dropout_p) @ V
