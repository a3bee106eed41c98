"""Numerically stable softmax."""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor


def softmax(x: Float[Tensor, " *shape"], dim: int = -1) -> Float[Tensor, " *shape"]:
    """Softmax of ``x`` along ``dim`` (any dim, negative allowed); same shape and dtype as ``x``.

    The max along ``dim`` is subtracted before ``exp``, so the result is shift invariant
    and exact for large inputs (``softmax(x + 1000) == softmax(x)``) instead of overflowing.
    Half-precision inputs are normalised in float32, as ``torch.softmax`` does internally.
    A slice that is entirely ``-inf`` gives NaN, as in ``torch.softmax``; attention masks
    handle that case themselves.
    """
    ndim = max(x.ndim, 1)  # a 0-d tensor behaves as one element along dim 0 / -1
    if not -ndim <= dim < ndim:
        raise IndexError(f"softmax: dim must be in [{-ndim}, {ndim}), got dim={dim}")
    in_dtype = x.dtype
    if in_dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    # Softmax is shift invariant, so the max (there only to keep exp in range) carries no
    # gradient: detached, autograd does not keep x for amax's backward, nor run that backward.
    shifted = x - x.amax(dim=dim, keepdim=True).detach()
    exps = torch.exp(shifted)
    return (exps / exps.sum(dim=dim, keepdim=True)).to(in_dtype)
