"""Byte-level BPE training as many students write it: every pair counted once, then after each
merge the counts of the pairs around it updated in the words that hold it, and the most
frequent pair found by a scan of all of them.

One legitimate choice differs from the bundled trainer's: the special tokens take the top
ids (vocab_size - n, ..., vocab_size - 1) and the merges the ids after the bytes. Upstream
compares the vocabulary as sets of ids and of tokens, so this is correct wherever the corpus
fills the vocabulary.
"""

import itertools
import os
from collections import Counter, defaultdict

import regex

GPT2_PRETOKEN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def _pretoken_counts(text: str, special_tokens: list[str]) -> Counter[tuple[bytes, ...]]:
    """Each pre-token, as a tuple of one-byte tokens, with its count; specials split the text."""
    longest_first = sorted(special_tokens, key=len, reverse=True)
    splitter = "|".join(map(regex.escape, longest_first))
    pieces = regex.split(splitter, text) if longest_first else [text]
    counts: Counter[tuple[bytes, ...]] = Counter()
    for piece in pieces:
        for match in regex.finditer(GPT2_PRETOKEN, piece):
            counts[tuple(bytes([b]) for b in match.group().encode("utf-8"))] += 1
    return counts


def _merged(word: tuple[bytes, ...], pair: tuple[bytes, bytes]) -> tuple[bytes, ...]:
    out, i = [], 0
    while i < len(word):
        if word[i : i + 2] == pair:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def train_bpe(
    input_path: str | os.PathLike, vocab_size: int, special_tokens: list[str]
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train on the file at `input_path`; (id -> token, merges in the order made)."""
    with open(input_path, encoding="utf-8") as f:
        words = _pretoken_counts(f.read(), special_tokens)
    pairs: Counter[tuple[bytes, bytes]] = Counter()
    holders: dict[tuple[bytes, bytes], set[tuple[bytes, ...]]] = defaultdict(set)
    for word, count in words.items():
        for pair in itertools.pairwise(word):
            pairs[pair] += count
            holders[pair].add(word)
    merges: list[tuple[bytes, bytes]] = []
    while 256 + len(merges) + len(special_tokens) < vocab_size and pairs:
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        merges.append(best)
        for word in holders.pop(best, set()):
            count = words.pop(word, 0)
            if not count:
                continue
            new = _merged(word, best)
            for pair in itertools.pairwise(word):
                pairs[pair] -= count
                if pairs[pair] <= 0:
                    del pairs[pair]
            for pair in itertools.pairwise(new):
                pairs[pair] += count
                holders[pair].add(new)
            words[new] += count
    vocab = {i: bytes([i]) for i in range(256)}
    vocab |= {256 + i: a + b for i, (a, b) in enumerate(merges)}
    top = vocab_size - len(special_tokens)
    vocab |= {top + i: token.encode("utf-8") for i, token in enumerate(special_tokens)}
    return vocab, merges
