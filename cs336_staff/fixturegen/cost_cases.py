"""Cases for the efficiency tests (params `"cost": true`): what a trainer's speed and a
tokenizer's streaming are measured on, drawn from the seed like every other input, so that
no submission has seen them.

- `train_bpe`: two corpora of Shakespeare, a large one the size of upstream's `corpus.en`
  (its speed test's) and a small one, each of `DOCUMENTS` documents joined by
  <|endoftext|>. The test charges the large one's cost at upstream's vocabulary of 500 less
  the small one's at a few merges, so that what a call costs whatever its corpus (a pool's
  start) cancels out;
  equal document counts give a trainer that makes a chunk per document, up to its pool's
  size, as many processes for both.
- `tokenizer`: a vocabulary of thousands of merges and the lines of a few pages, which the
  streaming test cycles through to make streams of any length: past the first pass no line
  is new, so a tokenizer that remembers its pre-tokens holds no more for a longer stream.
"""

from __future__ import annotations

import numpy as np

from cs336_staff.fixturegen.tokenizer_cases import (
    END,
    HF_TRAINING_CHARS,
    HF_VOCAB_SIZE,
    _passage,
    _utf8,
    pack,
    pack_model,
)
from cs336_staff.fixturegen.writer import FixtureSet
from cs336_staff.oracle import hf_bpe

# Upstream's speed test trains on corpus.en: 133,027 bytes, to a vocabulary of 500.
LARGE_CHARS = 128_000
SMALL_CHARS = 16_000
DOCUMENTS = 64
VOCAB_SIZE = 500
# The streaming test's pages, and how often a story ends among them (TinyStories, which
# upstream's memory test streams, ends one every few lines).
STREAM_CHARS = 6_000
LINES_PER_STORY = 24


def _documents(rng: np.random.Generator, chars: int) -> str:
    """`DOCUMENTS` passages of `chars / DOCUMENTS` characters each, from line starts drawn
    from `rng`, joined by <|endoftext|>."""
    return END.join(_passage(rng, chars // DOCUMENTS) for _ in range(DOCUMENTS))


def add_train_bpe_cost(fs: FixtureSet) -> None:
    rng = fs.rng("train_bpe", "cost")
    fs.add(
        "train_bpe",
        "cost",
        f"{DOCUMENTS} documents of Shakespeare, {LARGE_CHARS:,} and {SMALL_CHARS:,} "
        f"characters, trained to a vocabulary of {VOCAB_SIZE} as upstream's speed test "
        "trains corpus.en",
        {"vocab_size": VOCAB_SIZE, "special_tokens": [END], "cost": True},
        {
            "corpus_large": _utf8(_documents(rng, LARGE_CHARS)),
            "corpus_small": _utf8(_documents(rng, SMALL_CHARS)),
        },
        None,
        trivial="a trainer that computes nothing is fast",
    )


def add_tokenizer_cost(fs: FixtureSet) -> None:
    rng = fs.rng("tokenizer", "cost")
    window = _passage(rng, HF_TRAINING_CHARS)
    vocab, merges = hf_bpe.train(window.splitlines(keepends=True), HF_VOCAB_SIZE, [END])
    lines = _passage(rng, STREAM_CHARS).splitlines(keepends=True)
    # A story ends every LINES_PER_STORY lines, as a special token of its own line's end.
    lines = [
        line.rstrip("\n") + END + "\n" if i % LINES_PER_STORY == LINES_PER_STORY - 1 else line
        for i, line in enumerate(lines)
    ]
    fs.add(
        "tokenizer",
        "cost",
        f"{len(lines)} lines of Shakespeare, a story ending every {LINES_PER_STORY}, cycled "
        f"into streams of any length, encoded with {len(merges)} merges",
        {"special_tokens": [END], "cost": True},
        pack_model(vocab, merges) | pack([line.encode() for line in lines], "lines"),
        None,
        trivial="a tokenizer that yields nothing holds nothing",
    )


def add_cost(fs: FixtureSet) -> None:
    add_train_bpe_cost(fs)
    add_tokenizer_cost(fs)
