"""Byte-level BPE, written for obviousness: the reference the tokenizer fixtures come from.

Training recounts every pair before every merge; encoding applies every merge, in the order
learned, to each pre-token. Both are slow and plainly right, and share nothing with
`cs336_basics` (the GPT-2 pattern is a published fact, restated here).

Conventions (the contract): special tokens are found by scanning left to right, trying the
longest first at each position; they cut the text and take ids 256, 257, ... after the 256
single bytes, merged tokens following in merge order; the most frequent pair is merged,
and of equally frequent pairs the greater (comparing the two byte strings as a tuple).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

import regex

GPT2_SPLIT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def split_special(text: str, special_tokens: list[str]) -> list[tuple[str, bool]]:
    """The text cut into (piece, is_special_token), scanning left to right, longest first."""
    longest_first = sorted(special_tokens, key=len, reverse=True)
    pieces: list[tuple[str, bool]] = []
    plain = ""
    i = 0
    while i < len(text):
        token = next((s for s in longest_first if text.startswith(s, i)), None)
        if token is None:
            plain += text[i]
            i += 1
            continue
        if plain:
            pieces.append((plain, False))
            plain = ""
        pieces.append((token, True))
        i += len(token)
    if plain:
        pieces.append((plain, False))
    return pieces


def pretokens(text: str, special_tokens: list[str]) -> list[str]:
    """The pre-tokens of the text outside special tokens, in order."""
    out: list[str] = []
    for piece, special in split_special(text, special_tokens):
        if not special:
            out.extend(regex.findall(GPT2_SPLIT, piece))
    return out


def join_pair(word: list[bytes], pair: tuple[bytes, bytes]) -> list[bytes]:
    """Every non-overlapping occurrence of `pair`, left to right, joined into one token."""
    out: list[bytes] = []
    i = 0
    while i < len(word):
        if word[i : i + 2] == list(pair):
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


Word = tuple[bytes, ...]
Pair = tuple[bytes, bytes]


def greatest_of_most_frequent(pairs: Counter[Pair]) -> Pair:
    """The pair to merge: the most frequent, and of equally frequent pairs the greater."""
    return max(pairs, key=lambda p: (pairs[p], p))


def count_words(pieces: Iterable[str]) -> Counter[Word]:
    """Each pre-token as a tuple of one-byte tokens, with its count (an empty one has no pair
    to count and is left out)."""
    return Counter(tuple(bytes([b]) for b in p.encode("utf-8")) for p in pieces if p)


def train(
    text: str, vocab_size: int, special_tokens: list[str]
) -> tuple[dict[int, bytes], list[Pair], list[int]]:
    """The vocabulary and merges of BPE trained on `text` up to `vocab_size` tokens, and the
    count of each merge's pair when it was made (the contract scores the merges of pairs
    seen at least twice)."""
    words = count_words(pretokens(text, special_tokens))
    vocab = {i: bytes([i]) for i in range(256)}
    for token in special_tokens:
        vocab[len(vocab)] = token.encode("utf-8")
    learned = list(_learned(words, vocab, vocab_size, greatest_of_most_frequent))
    return vocab, [pair for pair, _ in learned], [count for _, count in learned]


def learn_merges(
    words: Counter[Word],
    vocab: dict[int, bytes],
    vocab_size: int,
    choose: Callable[[Counter[Pair]], Pair] = greatest_of_most_frequent,
) -> list[Pair]:
    """The merges learned from `words` (each a tuple of tokens, with its count) until `vocab`
    holds `vocab_size` tokens or no pair is left; each merged token is added to `vocab`.
    `choose` picks the pair to merge from the counts (the diagnosis catalog's BPE mistakes
    pass another; `train` always the contract's)."""
    return [pair for pair, _ in _learned(words, vocab, vocab_size, choose)]


def _learned(
    words: Counter[Word],
    vocab: dict[int, bytes],
    vocab_size: int,
    choose: Callable[[Counter[Pair]], Pair],
) -> Iterator[tuple[Pair, int]]:
    """`learn_merges`' merges, each with its pair's count when it was chosen."""
    while len(vocab) < vocab_size:
        pairs: Counter[Pair] = Counter()
        for word, count in words.items():
            for a, b in itertools.pairwise(word):
                pairs[(a, b)] += count
        if not pairs:
            break
        best = choose(pairs)
        yield best, pairs[best]
        vocab[len(vocab)] = best[0] + best[1]
        merged: Counter[Word] = Counter()
        for word, count in words.items():
            # A word without the pair's first token is left as it is (tested in C, where
            # joining every word took most of the diagnosis table's BPE cases).
            joined = tuple(join_pair(list(word), best)) if best[0] in word else word
            merged[joined] += count
        words = merged


def encode(
    text: str,
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    special_tokens: list[str],
) -> list[int]:
    """The ids of `text`: each pre-token's bytes with every merge applied in turn."""
    ids_of = {token: i for i, token in vocab.items()}
    ids: list[int] = []
    for piece, special in split_special(text, special_tokens):
        if special:
            ids.append(ids_of[piece.encode("utf-8")])
            continue
        for pretoken in regex.findall(GPT2_SPLIT, piece):
            word = [bytes([b]) for b in pretoken.encode("utf-8")]
            for pair in merges:
                word = join_pair(word, pair)
            ids.extend(ids_of[token] for token in word)
    return ids


def decode(ids: list[int], vocab: dict[int, bytes]) -> str:
    """The text of `ids`, with U+FFFD for every invalid UTF-8 sequence (Python's "replace")."""
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
