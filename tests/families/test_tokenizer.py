"""The BPE tokenizer: ids exactly as the oracle encodes, decoding that never raises, round
trips, and `encode_iterable` equal to `encode`."""

import random

import pytest

from cs336_harness import bpe_fingerprint
from cs336_harness.adapters.probes import tokenizer
from cs336_harness.cost import budgets
from cs336_harness.cost.causes import CAUSES
from tests.families import costs

pytestmark = pytest.mark.family("tokenizer")

# Pools the round-trip strings are drawn from: ASCII, whitespace runs, accents and combining
# marks, CJK, emoji (4-byte UTF-8, joiners, flags) and fragments of special tokens.
POOLS = [
    [chr(c) for c in range(32, 127)],
    [" ", "  ", "\n", "\n\n", "\t", "\r\n", "\u00a0", "\u3000"],
    ["é", "ü", "ß", "e\u0301", "Å", "ø"],
    ["中", "文", "日本", "한국어"],
    ["🙂", "🐍", "👩\u200d💻", "🇫🇷", "𝔘", "\U0010fffd"],
    ["<|", "|>", "endoftext", "<|endoftext|>", "<|s|>", "zzz", "'s", "'ll", "123"],
]


def round_trip_texts(count: int, seed: str) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(rng.choice(POOLS)) for _ in range(rng.randint(0, 40)))
            for _ in range(count)]  # fmt: skip


def _outputs(case, adapters, texts, decode=()):
    return tokenizer.tokenizer_outputs(
        adapters,
        vocab_flat=case["vocab_flat"],
        vocab_lengths=case["vocab_lengths"],
        merges_flat=case["merges_flat"],
        merges_lengths=case["merges_lengths"],
        special_tokens=case.params["special_tokens"],
        texts=texts,
        ids_to_decode=[list(ids) for ids in decode],
    )


def _texts(case):
    return [
        t.decode("utf-8") for t in bpe_fingerprint.unpack(case["texts_flat"], case["texts_lengths"])
    ]


def _split(flat, lengths):
    return [chunk.tolist() for chunk in flat.split(lengths.tolist())]


def _first_difference(got, expected, vocab):
    i = next((k for k, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
             min(len(got), len(expected)))  # fmt: skip

    def show(ids):
        return [vocab[t] if 0 <= t < len(vocab) else t for t in ids[i : i + 4]]

    return f"first difference at position {i}: got {show(got)!r}, expected {show(expected)!r}"


def test_encode(case, adapters):
    texts = _texts(case)
    expected = _split(case["expected_ids_flat"], case["expected_ids_lengths"])
    vocab = bpe_fingerprint.unpack(case["vocab_flat"], case["vocab_lengths"])
    out = _outputs(case, adapters, texts)
    for text, got, want in zip(texts, out["encoded"], expected, strict=True):
        assert not isinstance(got, dict), f"encode({text[:60]!r}) raised {got['error']}"
        assert got == want, (
            f"encode({text[:60]!r}) gives {len(got)} ids, the oracle {len(want)}; "
            + _first_difference(got, want, vocab)
        )


def test_encode_iterable(case, adapters):
    texts = _texts(case)
    expected = _split(case["expected_ids_flat"], case["expected_ids_lengths"])
    vocab = bpe_fingerprint.unpack(case["vocab_flat"], case["vocab_lengths"])
    out = _outputs(case, adapters, texts)
    for text, got, want in zip(texts, out["iterable"], expected, strict=True):
        assert not isinstance(got, dict), (
            f"encode_iterable over the lines of {text[:60]!r} raised {got['error']}"
        )
        assert got == want, (
            f"encode_iterable over the lines of {text[:60]!r} differs from encoding it whole; "
            + _first_difference(got, want, vocab)
        )


def test_decode(case, adapters):
    decode = _split(case["decode_flat"], case["decode_lengths"])
    expected = [
        t.decode("utf-8")
        for t in bpe_fingerprint.unpack(
            case["expected_decoded_flat"], case["expected_decoded_lengths"]
        )
    ]
    out = _outputs(case, adapters, [], decode)
    for ids, got, want in zip(decode, out["decoded"], expected, strict=True):
        assert not isinstance(got, dict), (
            f"decode({ids}) raised {got['error']}; invalid UTF-8 must become U+FFFD"
        )
        assert got == want, f"decode({ids}) gives {got!r}, expected {want!r}"


def test_round_trip(case, adapters):
    texts = round_trip_texts(150, seed=case.id)
    out = _outputs(case, adapters, texts)
    for text, back in zip(texts, out["round_trip"], strict=True):
        assert not isinstance(back, dict), f"decode(encode({text!r})) raised {back['error']}"
        assert back == text, f"decode(encode({text!r})) gives {back!r}"


@pytest.mark.family("tokenizer", cases="cost")
def test_encode_iterable_streams(case, adapters, request):
    """Upstream's memory test of `encode_iterable`, without its wall of RSS + 1 MB: the peak
    of the Python heap must not grow with the stream's length (`budgets.STREAM_ROUNDS`)."""
    for short, long, cut in budgets.STREAM_ROUNDS:
        readings = tokenizer.stream_memory(
            adapters,
            **costs.stored_pages(case),
            lengths=[short, long],
            cut=cut,
            merges_kept=budgets.STREAM_MERGES,
        )
        if not all(r["traced"] for r in readings):
            pytest.fail(
                "encode_iterable's memory could not be measured: tracemalloc was stopped "
                "while it ran",
                pytrace=False,
            )
        fields = ("peak", "first", "pulled", "ids", "cut")
        a, b = (
            budgets.Stream(n, *(r[f] for f in fields))
            for n, r in zip((short, long), readings, strict=True)
        )
        grown = budgets.stream_growth(a, b)
        if grown is None:
            budgets.record(request.node, max(b.peak - a.peak, 0) / budgets.stream_allowance(a, b))
            return
    budgets.record(
        request.node,
        float("inf") if b.read_whole else (b.peak - a.peak) / budgets.stream_allowance(a, b),
    )
    budgets.fail("encode_iterable does not stream", *grown)


@pytest.mark.hardening(
    "upstream tests no cost of encode; this project sets it beside the bundled implementation's"
)
@pytest.mark.family("tokenizer", cases="cost")
def test_encode_cost(case, adapters, request):
    """encode of a page, with every merge: its CPU time set beside the bundled
    implementation's; where it is far more, again with the first few hundred merges, to see
    whether it grows with them."""

    def cpu(merges_kept: int) -> float:
        _, seconds = tokenizer.encode_cost.measured(
            adapters,
            **costs.stored_pages(case),
            merges_kept=merges_kept,
            chars=budgets.ENCODE_CHARS,
        )
        return seconds

    merges = len(case["merges_lengths"])
    full = cpu(merges)
    reading = budgets.Beside(full, costs.yardstick(adapters), budgets.REFERENCE["encode"])
    budgets.record(request.node, reading.ratio / budgets.FAR)
    if not reading.far:
        return
    few = cpu(budgets.ENCODE_FEW_MERGES)
    grows = full / few if few > 0 else 1.0
    cause = "encode_rank_order" if grows > budgets.RANK_ORDER_GROWTH else "encode_costly"
    budgets.fail(
        f"encode costs {reading.ratio:.0f} times the bundled implementation's CPU "
        f"({1000 * full:.0f} ms for {budgets.ENCODE_CHARS:,} characters with {merges} merges, "
        f"where it takes {1000 * reading.reference_seconds:.0f} ms on this host)",
        CAUSES[cause],
        f"with {merges} merges it costs {grows:.1f} times what it costs with "
        f"{budgets.ENCODE_FEW_MERGES}",
    )
