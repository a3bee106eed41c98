"""A sample from a trained model, in the run's encoding and with its sampling settings."""

from __future__ import annotations

import torch

from cs336_basics.decoding import generate
from cs336_basics.training.config import TrainConfig
from cs336_basics.transformer_lm import TransformerLM


def sample(model: TransformerLM, config: TrainConfig, prompt: str) -> str:
    """``prompt`` and up to ``config.sample_tokens`` sampled tokens after it, as text; a
    tokenizer's first special token (``<|endoftext|>`` by convention) ends the sample."""
    device = next(model.parameters()).device
    codec = config.codec()
    prompt_ids = torch.tensor(codec.encode(prompt), device=device, dtype=torch.long)
    specials = config.tokenizer.special_tokens if config.tokenizer else ()
    ids_of = {token: i for i, token in codec.vocab.items()}
    new = generate(
        model,
        prompt_ids,
        config.sample_tokens,
        config.temperature,
        config.top_p,
        end_of_text_id=ids_of[specials[0].encode("utf-8")] if specials else None,
        generator=torch.Generator(device).manual_seed(config.seed),
    )
    return codec.decode(prompt_ids.tolist() + new.tolist())
