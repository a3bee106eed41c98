"""Known mistakes in BPE training.

Each variant trains on the case's corpus with the mistake, by the oracle's own merge loop
(`oracle.bpe.learn_merges`) on mistaken pre-tokens, a mistaken vocabulary or a mistaken choice
among tied pairs, and returns the model's fingerprint (`cs336_harness/bpe_fingerprint.py`),
which the diagnosis compares exactly. A variant returns None where its model is the oracle's:
the mistake cannot show on that corpus (no special token in it, no tie it breaks otherwise).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import numpy as np
import regex

from cs336_harness.bpe_fingerprint import fingerprint
from cs336_harness.judging.diagnosis.numpy_cases import NumpyCase
from cs336_staff.catalog.mistake import Mistake
from cs336_staff.oracle import bpe
from cs336_staff.oracle.bpe import GPT2_SPLIT, Pair, greatest_of_most_frequent

MISTAKES: list[Mistake] = []

Pretokenizer = Callable[[str, list[str]], Iterable[str]]


def _trained(
    c: NumpyCase,
    pretokens: Pretokenizer = bpe.pretokens,
    specials_in_vocab: bool = True,
    choose: Callable[[Counter[Pair]], Pair] = greatest_of_most_frequent,
) -> np.ndarray | None:
    """The fingerprint of the model trained on the case with the mistaken parts given; None
    where it is the oracle's."""
    text = bytes(c.inputs["corpus"].tolist()).decode("utf-8")
    specials: list[str] = c.params["special_tokens"]
    vocab = {i: bytes([i]) for i in range(256)}
    if specials_in_vocab:
        vocab |= {256 + j: s.encode("utf-8") for j, s in enumerate(specials)}
    words = bpe.count_words(pretokens(text, specials))
    merges = bpe.learn_merges(words, vocab, c.params["vocab_size"], choose)
    out = fingerprint(vocab.values(), merges)
    return None if np.array_equal(out, c.expected) else out


def _specials_kept(text: str, specials: list[str]) -> list[str]:
    """The text cut at the special tokens, each special token kept as a pre-token of its own."""
    out: list[str] = []
    for piece, special in bpe.split_special(text, specials):
        out += [piece] if special else regex.findall(GPT2_SPLIT, piece)
    return out


def _between_specials(text: str, specials: list[str]) -> list[str]:
    """Each run of text between special tokens as one pre-token."""
    return [piece for piece, special in bpe.split_special(text, specials) if not special]


def _whitespace_split(text: str, specials: list[str]) -> list[str]:
    return [w for piece, special in bpe.split_special(text, specials) if not special
            for w in piece.split()]  # fmt: skip


def _lesser_of_most_frequent(pairs: Counter[Pair]) -> Pair:
    top = max(pairs.values())
    return min(p for p, n in pairs.items() if n == top)


def _greatest_concatenation(pairs: Counter[Pair]) -> Pair:
    # The pair itself last, so that pairs with one concatenation ((b'a', b'bc'), (b'ab',
    # b'c')) are ordered at all; a student's order there is the dict's, rarely a tie.
    return max(pairs, key=lambda p: (pairs[p], p[0] + p[1], p))


MISTAKES += [
    Mistake(
        "bpe_special_tokens_as_pretokens",
        "the text is split at the special tokens but each one is kept as a pre-token of its "
        "own, so the pairs inside it (b'<', b'|'), (b'|', b'>'), ... are counted and merged; a "
        "special token is never part of a merge",
        {"train_bpe": lambda c: _trained(c, pretokens=_specials_kept)},
    ),
    Mistake(
        "bpe_text_not_split_at_special_tokens",
        "the text is not split at the special tokens: they are pre-tokenized as plain text, so "
        "pairs inside them and across their edges are counted",
        {"train_bpe": lambda c: _trained(c, pretokens=lambda text, _: bpe.pretokens(text, []))},
    ),
    Mistake(
        "bpe_merges_across_pretokens",
        "pairs are counted across pre-tokens: the text between special tokens is not split "
        "with the GPT-2 pattern before counting",
        {"train_bpe": lambda c: _trained(c, pretokens=_between_specials)},
    ),
    Mistake(
        "bpe_pretokens_split_at_whitespace",
        "the pre-tokens are the text split at whitespace (str.split), not the GPT-2 pattern's: "
        "the spaces are lost, so no pair (b' ', ...) is counted",
        {"train_bpe": lambda c: _trained(c, pretokens=_whitespace_split)},
    ),
    Mistake(
        "bpe_special_tokens_not_in_vocab",
        "the special tokens are left out of the vocabulary (they take ids 256, 257, ... before "
        "the merges, and count toward vocab_size)",
        {"train_bpe": lambda c: _trained(c, specials_in_vocab=False)},
    ),
    Mistake(
        "bpe_ties_to_lesser_pair",
        "a tie between equally frequent pairs goes to the lesser pair; the contract merges the "
        "greater (comparing the pairs as tuples of bytes)",
        {"train_bpe": lambda c: _trained(c, choose=_lesser_of_most_frequent)},
    ),
    Mistake(
        "bpe_ties_by_concatenation",
        "a tie between equally frequent pairs goes to the greater concatenation a + b, not the "
        "greater pair (a, b): they differ where one pair's first token is a prefix of the "
        "other's, (b' ', b'bb') against (b' a', b'bb')",
        {"train_bpe": lambda c: _trained(c, choose=_greatest_concatenation)},
    ),
]
