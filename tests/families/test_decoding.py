"""Decoding: temperature, nucleus (top-p) sampling and greedy generation from the LM.

Sampling is checked on its distribution, not on one draw: 40000 tokens sampled from one row
of logits must all lie in the nucleus, and each token's count must lie within 7 standard
deviations of the oracle's probability (a correct sampler fails with probability < 1e-10;
the fixtures are drawn so that every usual mistake moves some probability by ≥ 0.06, over
four times the band).
"""

import math

import pytest
import torch

from cs336_harness.judging.cases import Case

pytestmark = pytest.mark.family("decoding")

SIGMAS = 7
SEED = 20260


def _check_distribution(case: Case, adapters) -> None:
    p, probs = case.params, case.expected.double()
    n = p["samples"]
    ids = adapters.run_sample_next_token(
        logits=case["logits"].expand(n, -1).contiguous(),
        temperature=p["temperature"], top_p=p["top_p"], seed=SEED,
    )  # fmt: skip
    assert isinstance(ids, torch.Tensor) and tuple(ids.shape) == (n,), (
        f"expected one token id per row: shape ({n},), got {getattr(ids, 'shape', type(ids))}"
    )
    nucleus = torch.nonzero(probs).flatten().tolist()
    outside = sorted(set(ids.tolist()) - set(nucleus))
    assert not outside, (
        f"sampled tokens {outside[:10]} outside the nucleus {nucleus} (temperature, then the "
        "smallest set of most likely tokens whose mass reaches top_p)"
    )
    expected = [round(v, 4) for v in probs.tolist()]
    counts = torch.bincount(ids.long(), minlength=len(probs)).double()
    for token, (count, q) in enumerate(zip(counts.tolist(), probs.tolist(), strict=True)):
        sd = math.sqrt(n * q * (1 - q))
        assert abs(count - n * q) <= SIGMAS * sd + 1, (
            f"token {token} sampled {count / n:.4f} of the time, expected {q:.4f} "
            f"(± {SIGMAS * sd / n:.4f}); the whole expected distribution: {expected}"
        )


def test_decoding(case, adapters):
    p = case.params
    if "prompt" in case.tensors:
        new = adapters.run_generate(
            **{k: p[k] for k in ("vocab_size", "context_length", "d_model", "num_layers",
                                 "num_heads", "d_ff", "rope_theta", "max_new_tokens",
                                 "temperature", "top_p", "end_of_text_id")},
            weights=case.weights, prompt=case["prompt"], seed=SEED,
        )  # fmt: skip
        expected = case.expected.long().tolist()
        got = new.tolist() if isinstance(new, torch.Tensor) else new
        assert got == expected, (
            f"generated {got}, expected {expected} (greedy: top_p {p['top_p']}; "
            f"end_of_text_id {p['end_of_text_id']}, max_new_tokens {p['max_new_tokens']}; "
            "the new tokens only, end-of-text included)"
        )
    elif p["samples"] > 1:
        _check_distribution(case, adapters)
    else:
        ids = adapters.run_sample_next_token(
            logits=case["logits"], temperature=p["temperature"], top_p=p["top_p"], seed=SEED
        )
        expected = case.expected.long()
        assert isinstance(ids, torch.Tensor) and torch.equal(ids.long().cpu(), expected), (
            f"sampled {ids.tolist() if isinstance(ids, torch.Tensor) else ids}, expected the "
            f"arg-max of each row {expected.tolist()}"
        )
