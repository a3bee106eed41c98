"""The bundled tokenizer's own behaviour, beyond the `tokenizer` family's contract:
`encode_iterable` keeps memory flat and agrees with `encode` however the text is cut, and
the vocabulary files round-trip. (It imports `cs336_basics` directly, so it runs only on the
bundled implementation; see tests/conftest.py.)"""

import itertools
import random
import tracemalloc

import pytest

from cs336_basics.bpe_training import train_bpe
from cs336_basics.tokenizer import Tokenizer

END = "<|endoftext|>"
WORDS = [" the", " cat", " sat", "\n", "\n\n", "  ", " 🙂", "'ll", " naïve", "aaaa", END]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Tokenizer:
    corpus = tmp_path_factory.mktemp("bpe") / "corpus.txt"
    corpus.write_bytes("".join(w * (i + 3) for i, w in enumerate(WORDS)).encode() * 5)
    vocab, merges = train_bpe(corpus, 300, [END, END + END])
    return Tokenizer(vocab, merges, [END, END + END])


def test_encode_iterable_memory_is_flat(tokenizer):
    lines = (" the cat sat 🙂 on the mat'll\n" * 3 + END for _ in itertools.count())
    total = 0
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        # About 150 kB of text, never held whole: the ids are counted, not kept. Held whole,
        # the text alone would be twice the bound below.
        for _ in tokenizer.encode_iterable(itertools.islice(lines, 1_500)):
            total += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total > 50_000
    assert peak < 64_000, f"encode_iterable peaked at {peak} bytes traced on a 150 kB stream"


def test_encode_iterable_equals_encode_wherever_cut(tokenizer):
    # 300 texts from pieces that merge, split and nearly match a special token, each cut at
    # up to 6 places. Drawn by a seeded `random`, not Hypothesis, whose import alone cost
    # the everyday suite a second; a failure names the chunks of the text that broke it.
    pieces = [*WORDS, " ", "'", "l", "<|", "|>", "é", "1"]
    draw = random.Random(0)
    for _ in range(300):
        text = "".join(draw.choices(pieces, k=draw.randint(0, 30)))
        cuts = [draw.randint(0, 200) for _ in range(draw.randint(0, 6))]
        bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
        chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
        assert list(tokenizer.encode_iterable(chunks)) == tokenizer.encode(text), chunks
        assert tokenizer.decode(tokenizer.encode(text)) == text


def test_files_round_trip(tokenizer, tmp_path):
    tokenizer.save(tmp_path / "vocab.json", tmp_path / "merges.txt")
    loaded = Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", [END])
    assert loaded.vocab == tokenizer.vocab and loaded.merges == tokenizer.merges
    text = f" the cat{END} sat 🙂\n\n"
    assert loaded.encode(text) == tokenizer.encode(text)
