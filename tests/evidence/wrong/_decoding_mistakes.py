"""Next-token sampling in which one known mistake can be switched on."""

import torch


def sample_with(logits, temperature, top_p, seed, mistake=""):
    """`mistake`: "drop_crossing_token" (keep tokens while the mass *including* them is ≤
    top_p), "nucleus_before_temperature", "temperature_multiplies"."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    scaled = logits * temperature if mistake == "temperature_multiplies" else logits / temperature
    probs = torch.softmax(scaled.float(), dim=-1)
    ranking = (
        torch.softmax(logits.float(), dim=-1) if mistake == "nucleus_before_temperature" else probs
    )
    sorted_probs, order = ranking.sort(dim=-1, descending=True)
    if mistake == "drop_crossing_token":
        keep_sorted = sorted_probs.cumsum(-1) <= top_p
        keep_sorted[..., 0] = True
    else:
        keep_sorted = (sorted_probs.cumsum(-1) - sorted_probs) < top_p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    kept = (probs * keep).reshape(-1, probs.shape[-1])
    generator = torch.Generator().manual_seed(seed)
    return torch.multinomial(kept, 1, generator=generator).reshape(probs.shape[:-1])
