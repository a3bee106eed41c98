"""Cross-entropy of unnormalised logits against integer targets, averaged over every position."""

from __future__ import annotations

from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor
from torch.autograd.function import once_differentiable

from cs336_basics._checks import check_index_range, check_integer_tensor


def cross_entropy(
    inputs: Float[Tensor, "*batch vocab_size"], targets: Int[Tensor, " *batch"]
) -> Float[Tensor, ""]:
    """Mean over all leading positions of ``-log softmax(inputs)[target]``; a 0-d tensor.

    Written as ``logsumexp(x) - x[target]`` with the row max taken out first, so logits in
    the thousands neither overflow ``exp`` nor lose the target's log-probability to
    rounding. Half-precision logits are reduced in float32; the loss has the logits' dtype.
    """
    check_integer_tensor("cross_entropy", "targets", targets)
    if inputs.ndim == 0 or inputs.shape[:-1] != targets.shape:
        raise ValueError(
            "cross_entropy: inputs must be (..., vocab_size) and targets (...) with the same "
            f"leading dims, got inputs.shape={tuple(inputs.shape)}, "
            f"targets.shape={tuple(targets.shape)}"
        )
    check_index_range("cross_entropy", "targets", targets, inputs.shape[-1])
    logits = inputs.float() if inputs.dtype in (torch.float16, torch.bfloat16) else inputs
    return _CrossEntropy.apply(logits, targets).to(inputs.dtype)


class _CrossEntropy(torch.autograd.Function):
    """The mean loss, with its backward written out: ``(softmax(x) - onehot(target)) / N``.

    Autograd through the forward's ops would keep the shifted logits and their exps, and
    run back through the log, the sum, the exp and the shift, each over the whole
    ``(N, vocab)`` array (the largest of a language model's step after the LM head); the
    written-out backward is one pass over the saved exps and a scatter into the targets.
    Its own backward is not written (a second derivative would treat the saved exps as
    constants), so a double backward is refused rather than wrong.
    """

    @staticmethod
    def forward(ctx: Any, logits: Tensor, targets: Tensor) -> Tensor:
        shifted = logits - logits.amax(dim=-1, keepdim=True)
        target_logit = shifted.gather(-1, targets.unsqueeze(-1))
        # In place: the shifted logits are not needed again, and at a language model's
        # sizes (40 MB at the bench's) one such array fewer is 10,000 page faults a step.
        # (Unlike softmax's division, whose result is the output, this write survives
        # torch.compile: tests/package/test_compiled.py checks both.)
        exps = shifted.exp_()
        sums = exps.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(exps, sums, targets)
        return (sums.log() - target_logit).mean()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        exps, sums, targets = ctx.saved_tensors
        scale = grad / targets.numel()
        probs = exps * (scale / sums)  # softmax(x) · scale
        # One per position: the target's probability less 1, times the scale.
        probs.scatter_add_(-1, targets.unsqueeze(-1), (-scale).expand_as(sums).to(probs.dtype))
        return probs, None
