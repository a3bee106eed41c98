"""BPE training, naive (every pair recounted per merge), in which one known mistake can be
switched on."""

import itertools
from collections import Counter

import regex

GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def train_with(input_path, vocab_size, special_tokens, mistake=""):
    """`mistake`: "ties_to_lesser" (equal counts go to the smaller pair), "ties_by_concatenation"
    (equal counts go to the greater a + b), "across_pretokens" (each text between special
    tokens is one word), "whitespace_split" (str.split for the GPT-2 pattern),
    "specials_not_in_vocab", "pairs_inside_specials" (special tokens stay in the text,
    pre-tokenized like any other), "specials_as_pretokens" (the text split at special tokens
    kept by a capturing group, each special token a word)."""
    with open(input_path, "rb") as f:
        text = f.read().decode("utf-8")
    if special_tokens and mistake != "pairs_inside_specials":
        ordered = sorted(special_tokens, key=len, reverse=True)
        splitter = "|".join(regex.escape(s) for s in ordered)
        if mistake == "specials_as_pretokens":
            splitter = f"({splitter})"
        segments = regex.split(splitter, text)
    else:
        segments = [text]
    words = Counter()
    for segment in segments:
        kept_whole = mistake == "specials_as_pretokens" and segment in special_tokens
        if mistake == "across_pretokens" or kept_whole:
            pieces = [segment]
        elif mistake == "whitespace_split":
            pieces = segment.split()
        else:
            pieces = regex.findall(GPT2, segment)
        words.update(tuple(bytes([b]) for b in p.encode()) for p in pieces if p)
    vocab = {i: bytes([i]) for i in range(256)}
    if mistake != "specials_not_in_vocab":
        vocab |= {256 + j: s.encode() for j, s in enumerate(special_tokens)}
    merges = []
    while len(vocab) < vocab_size:
        pairs = Counter()
        for word, count in words.items():
            for pair in itertools.pairwise(word):
                pairs[pair] += count
        if not pairs:
            break
        top = max(pairs.values())
        tied = [p for p, c in pairs.items() if c == top]
        if mistake == "ties_to_lesser":
            best = min(tied)
        elif mistake == "ties_by_concatenation":
            best = max(tied, key=lambda p: (p[0] + p[1], p))
        else:
            best = max(tied)
        merges.append(best)
        vocab[len(vocab)] = best[0] + best[1]
        merged = Counter()
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if word[i : i + 2] == best:
                    out.append(best[0] + best[1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += count
        words = merged
    return vocab, merges
