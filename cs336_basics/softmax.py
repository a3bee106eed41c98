"""Numerically stable softmax."""

from __future__ import annotations

from typing import Any

import torch
from jaxtyping import Bool, Float
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
    return _in_float32_at_least(x, dim, None)


def masked_softmax(
    x: Float[Tensor, " *shape"], mask: Bool[Tensor, " *mask_shape"], dim: int = -1
) -> Float[Tensor, " *shape"]:
    """Softmax along ``dim`` over the entries ``mask`` allows (``True``, broadcast to ``x``);
    0 at the others, and 0 throughout a slice that allows none (where a softmax of its
    ``-inf`` scores would be NaN): attention's weights, where such a query has nothing to
    average over."""
    return _in_float32_at_least(x, dim, mask)


def _in_float32_at_least(x: Tensor, dim: int, mask: Tensor | None) -> Tensor:
    in_dtype = x.dtype
    if in_dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    return _Softmax.apply(x, dim, mask).to(in_dtype)


class _Softmax(torch.autograd.Function):
    """``exp(x - max) / sum``, with its backward written out: ``y ⊙ (g - Σ g ⊙ y)``.

    Autograd through the forward's ops would keep ``exp``'s output and the sum for their
    backward and run five ops back over the whole tensor; the written-out backward keeps the
    output alone and makes three passes (attention's scores are the largest tensors of a
    training step). Softmax is shift invariant, so the max carries no gradient, and an entry
    the mask leaves out has ``y = 0``, so none either. The backward is itself
    differentiable: it uses the saved output, whose own backward is this one.
    """

    @staticmethod
    def forward(ctx: Any, x: Tensor, dim: int, mask: Tensor | None) -> Tensor:
        if mask is not None:
            x = torch.where(mask, x, float("-inf"))
        top = x.amax(dim=dim, keepdim=True)
        if mask is not None:
            # A slice the mask leaves empty has max -inf, and x - max = -inf - -inf = NaN;
            # shifted by 0 instead its exps are all 0, and their sum, 0, divides as 1. Every
            # other slice's sum holds its max's exp(0) = 1, which the clamp leaves alone.
            top = torch.where(top.isneginf(), 0.0, top)
        # Out of place: under torch.compile (2.11), a forward that writes in place saves
        # the wrong tensor for the backward, and the gradients come out wrong.
        exps = torch.exp(x - top)
        sums = exps.sum(dim=dim, keepdim=True)
        y = exps / (sums if mask is None else sums.clamp_min(1.0))
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None]:
        (y,) = ctx.saved_tensors
        g = grad * y
        return g.addcmul_(y, g.sum(dim=ctx.dim, keepdim=True), value=-1), None, None
