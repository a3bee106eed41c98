"""Cross-entropy of unnormalised logits against integer targets, averaged over every position."""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor

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
    shifted = logits - logits.amax(dim=-1, keepdim=True).detach()
    log_normaliser = torch.log(torch.exp(shifted).sum(dim=-1))
    target_logit = shifted.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (log_normaliser - target_logit).mean().to(inputs.dtype)
