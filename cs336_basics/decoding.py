"""Decoding from the language model: temperature, nucleus (top-p) sampling, stopping."""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor

from cs336_basics._checks import check_integer_tensor
from cs336_basics.softmax import softmax


def next_token_probabilities(
    logits: Float[Tensor, "*batch vocab_size"], temperature: float = 1.0, top_p: float = 1.0
) -> Float[Tensor, "*batch vocab_size"]:
    """The distribution the next token is drawn from, per row of ``logits`` (float32).

    ``softmax(logits / temperature)``, then nucleus truncation: sorted by probability, the
    smallest prefix whose mass reaches ``top_p`` is kept (always at least the most likely
    token) and renormalised; everything else gets 0. ``temperature = 0`` means greedy:
    all the mass on the arg-max (a choice of this project; the handout leaves τ = 0 open).
    """
    if temperature < 0:
        raise ValueError(f"decoding: temperature must be ≥ 0, got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"decoding: top_p must be in (0, 1], got {top_p}")
    logits = logits.float()
    if temperature == 0:
        greedy = torch.zeros_like(logits)
        return greedy.scatter_(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
    probs = softmax(logits / temperature, dim=-1)
    if top_p == 1:
        return probs
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    # A token stays if the mass strictly before it is still short of top_p.
    keep_sorted = (sorted_probs.cumsum(dim=-1) - sorted_probs) < top_p
    keep = torch.zeros_like(keep_sorted).scatter_(-1, order, keep_sorted)
    kept = probs * keep
    return kept / kept.sum(dim=-1, keepdim=True)


def sample_next_token(
    logits: Float[Tensor, "*batch vocab_size"],
    temperature: float = 1.0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> Int[Tensor, " *batch"]:
    """One token id per row of ``logits``, drawn from `next_token_probabilities`."""
    probs = next_token_probabilities(logits, temperature, top_p)
    flat = probs.reshape(-1, probs.shape[-1])
    ids = torch.multinomial(flat, num_samples=1, generator=generator)
    return ids.reshape(probs.shape[:-1])


@torch.no_grad()
def generate(
    model: torch.nn.Module,
    prompt: Int[Tensor, " seq"],
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    end_of_text_id: int | None = None,
    generator: torch.Generator | None = None,
) -> Int[Tensor, " new"]:
    """Extend ``prompt`` one sampled token at a time; return the new tokens only.

    Stops after ``max_new_tokens`` or right after emitting ``end_of_text_id`` (which is
    included). The model sees at most its last ``context_length`` tokens (its attribute,
    when it has one), so generation can run past the context window.
    """
    check_integer_tensor("generate", "prompt", prompt)
    if prompt.ndim != 1 or prompt.numel() == 0:
        raise ValueError(f"generate: prompt must be a non-empty 1-D tensor, got {prompt.shape}")
    if max_new_tokens < 0:
        raise ValueError(f"generate: max_new_tokens must be ≥ 0, got {max_new_tokens}")
    was_training = model.training
    model.eval()
    context = getattr(model, "context_length", None)
    tokens, new = prompt, []
    for _ in range(max_new_tokens):
        window = tokens if context is None else tokens[-context:]
        logits = model(window.unsqueeze(0))[0, -1]
        token = sample_next_token(logits, temperature, top_p, generator)
        new.append(token)
        tokens = torch.cat([tokens, token.reshape(1)])
        if end_of_text_id is not None and int(token) == end_of_text_id:
            break
    model.train(was_training)
    return torch.stack(new) if new else prompt.new_empty(0)
