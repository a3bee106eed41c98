"""BPE training: merges in order and the vocabulary, exactly as the oracle trains them."""

import pytest

from cs336_harness import probes

pytestmark = pytest.mark.family("train_bpe")


def _expected(case):
    tokens = probes.unpack(case["vocab_flat"], case["vocab_lengths"])
    halves = probes.unpack(case["merges_flat"], case["merges_lengths"])
    return tokens, list(zip(halves[0::2], halves[1::2], strict=True))


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
    _, merges = _trained(case, adapters)
    first = next(
        (i for i, (m, e) in enumerate(zip(merges, expected, strict=False)) if m != e), None
    )
    assert first is None, (
        f"merge {first} is {merges[first]!r}, the oracle's is {expected[first]!r} (count ties "
        f"go to the greater pair); merges before it agree: {expected[max(first - 3, 0) : first]!r}"
    )
    assert len(merges) == len(expected), (
        f"{len(merges)} merges, the oracle made {len(expected)} (vocab_size "
        f"{case.params['vocab_size']}; training stops early only when no pair is left)"
    )


def test_train_bpe_vocab(case, adapters):
    tokens, _ = _expected(case)
    vocab, _ = _trained(case, adapters)
    gaps = sorted(set(range(len(vocab))) - set(vocab))
    assert not gaps, (
        f"the vocabulary's ids are not 0 … {len(vocab) - 1}: {_ranges(gaps)} missing, "
        f"{_ranges(sorted(set(vocab) - set(range(len(vocab)))))} beyond them"
    )
    missing = sorted(set(tokens) - set(vocab.values()))
    extra = sorted(set(vocab.values()) - set(tokens))
    assert not missing and not extra and len(vocab) == len(tokens), (
        f"vocabulary of {len(vocab)} tokens, the oracle's has {len(tokens)}; missing "
        f"{missing[:5]!r}, unexpected {extra[:5]!r} (special tokens: "
        f"{case.params['special_tokens']})"
    )


@pytest.mark.hardening(
    "upstream compares the vocabulary's tokens as a set; this project fixes the ids: bytes, "
    "then special tokens in the order given, then merges in the order made"
)
def test_train_bpe_vocab_ids(case, adapters):
    tokens, _ = _expected(case)
    vocab, _ = _trained(case, adapters)
    wrong = [i for i, token in enumerate(tokens) if vocab.get(i) != token]
    assert not wrong, (
        f"id {wrong[0]} is {vocab.get(wrong[0])!r}, expected {tokens[wrong[0]]!r} "
        f"({len(wrong)} ids differ)"
    )
