"""BPE training: merges in order and the vocabulary, exactly as the oracle trains them.

A failure hands the trained model to the diagnosis as its fingerprint
(`cs336_harness/bpe_fingerprint.py`), so that its message opens with the likely cause where
the model is a catalogued mistake's (pairs counted inside special tokens, ties broken the
other way, ...); a model whose fingerprint is the oracle's (its ids alone differ) is not
diagnosed.
"""

import pytest
import torch

from cs336_harness import bpe_fingerprint
from cs336_harness.adapters.probes import tokenizer as probes
from cs336_harness.judging.compare import OracleMismatch

pytestmark = pytest.mark.family("train_bpe")


def _expected(case):
    return bpe_fingerprint.stored_model(case.tensors)


def _fail(message: str, case, vocab: dict, merges: list) -> None:
    """Fail with `message`, handing the model's fingerprint to the diagnosis, compared
    exactly (no tolerance: tokens are bytes)."""
    __tracebackhide__ = True
    actual = bpe_fingerprint.fingerprint(vocab.values(), merges)
    expected = bpe_fingerprint.stored(case.tensors)
    if actual.shape == expected.shape and (actual == expected).all():
        pytest.fail(message, pytrace=False)
    raise OracleMismatch(
        message, torch.from_numpy(actual), torch.from_numpy(expected), 0.0, 0.0, torch.int64
    )


def _trained(case, adapters):
    out = probes.bpe_training(adapters, corpus=case["corpus"], **case.params)
    tokens = [bytes(t) for t in out["tokens"]]
    merges = [(bytes(a), bytes(b)) for a, b in out["merges"]]
    return dict(zip(out["ids"], tokens, strict=True)), merges


def _ranges(ids: list[int]) -> str:
    """[3, 4, 5, 9] -> '3…5, 9'."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(f"{a}…{b}" if b > a else str(a) for a, b in runs[:4]) + (
        ", …" if len(runs) > 4 else ""
    )


def test_train_bpe_merges(case, adapters):
    _, expected = _expected(case)
    vocab, merges = _trained(case, adapters)
    first = next(
        (i for i, (m, e) in enumerate(zip(merges, expected, strict=False)) if m != e), None
    )
    if first is not None:
        _fail(
            f"merge {first} is {merges[first]!r}, the oracle's is {expected[first]!r} (count "
            f"ties go to the greater pair); merges before it agree: "
            f"{expected[max(first - 3, 0) : first]!r}",
            case,
            vocab,
            merges,
        )
    if len(merges) != len(expected):
        _fail(
            f"{len(merges)} merges, the oracle made {len(expected)} (vocab_size "
            f"{case.params['vocab_size']}; training stops early only when no pair is left)",
            case,
            vocab,
            merges,
        )


def test_train_bpe_vocab(case, adapters):
    tokens, _ = _expected(case)
    vocab, merges = _trained(case, adapters)
    gaps = sorted(set(range(len(vocab))) - set(vocab))
    if gaps:
        _fail(
            f"the vocabulary's ids are not 0 … {len(vocab) - 1}: {_ranges(gaps)} missing, "
            f"{_ranges(sorted(set(vocab) - set(range(len(vocab)))))} beyond them",
            case,
            vocab,
            merges,
        )
    missing = sorted(set(tokens) - set(vocab.values()))
    extra = sorted(set(vocab.values()) - set(tokens))
    if missing or extra or len(vocab) != len(tokens):
        _fail(
            f"vocabulary of {len(vocab)} tokens, the oracle's has {len(tokens)}; missing "
            f"{missing[:5]!r}, unexpected {extra[:5]!r} (special tokens: "
            f"{case.params['special_tokens']})",
            case,
            vocab,
            merges,
        )


@pytest.mark.hardening(
    "upstream compares the vocabulary's tokens as a set; this project fixes the ids: bytes, "
    "then special tokens in the order given, then merges in the order made"
)
def test_train_bpe_vocab_ids(case, adapters):
    tokens, _ = _expected(case)
    vocab, merges = _trained(case, adapters)
    wrong = [i for i, token in enumerate(tokens) if vocab.get(i) != token]
    if wrong:
        _fail(
            f"id {wrong[0]} is {vocab.get(wrong[0])!r}, expected {tokens[wrong[0]]!r} "
            f"({len(wrong)} ids differ)",
            case,
            vocab,
            merges,
        )
