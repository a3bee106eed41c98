"""Training a byte-level BPE vocabulary: the most frequent adjacent pair is merged, repeatedly.

Ids: 0–255 are the single bytes, then the special tokens in the order given, then one id per
merge in the order the merges were made. Ties between pairs of equal count go to the
lexicographically greater pair of byte strings (``(b"b", b"a")`` beats ``(b"a", b"z")``).
Special tokens cut the text before pre-tokenization and are never part of a pair, and pairs
never span two pre-tokens. Pair counts are updated for the words a merge touches only.

``cs336-train-bpe CORPUS --vocab-size N --out DIR`` trains on a file and saves the tokenizer
(:meth:`Tokenizer.save`'s formats) with its timings.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import multiprocessing
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from os import PathLike
from pathlib import Path

from cs336_basics.tokenizer import (
    GPT2_PATTERN,
    Tokenizer,
    special_token_pattern,
    split_at_special_tokens,
)

# Below this many bytes, starting worker processes costs more than counting in one.
PARALLEL_MIN_BYTES = 1 << 22

Pair = tuple[bytes, bytes]


def _count_pretokens(text: str, special_tokens: list[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for piece, special in split_at_special_tokens(text, special_token_pattern(special_tokens)):
        if not special:
            counts.update(GPT2_PATTERN.findall(piece))
    return counts


def _count_chunk(path: str, start: int, end: int, special_tokens: list[str]) -> Counter[str]:
    with open(path, "rb") as f:
        f.seek(start)
        return _count_pretokens(f.read(end - start).decode("utf-8"), special_tokens)


def _chunk_bounds(path: str, size: int, chunks: int, separator: bytes) -> list[int]:
    """Offsets that cut the file into about ``chunks`` pieces, each cut at the start of an
    occurrence of ``separator`` (so no pre-token, special token or UTF-8 character is cut),
    from 0 to ``size``."""
    bounds = [0]
    block = 1 << 20
    with open(path, "rb") as f:
        for guess in range(size // chunks, size, size // chunks):
            position = max(guess, bounds[-1] + 1)
            while position < size:
                f.seek(position)
                # A separator's length more than the step: one starting in this block is whole.
                found = f.read(block + len(separator) - 1).find(separator)
                if found >= 0:
                    bounds.append(position + found)
                    break
                position += block
    return [*bounds, size]


def count_pretokens(
    input_path: str | PathLike[str], special_tokens: list[str], num_processes: int | None = None
) -> Counter[str]:
    """How often each pre-token occurs in the file. Large files are counted in parallel, in
    chunks cut at the first special token, when no other special token contains it (a cut
    there could split a longer one)."""
    path = os.fspath(input_path)
    size = Path(path).stat().st_size
    processes = num_processes or os.cpu_count() or 1
    separator = special_tokens[0] if special_tokens else ""
    splittable = separator and not any(separator in s for s in special_tokens if s != separator)
    if processes < 2 or size < PARALLEL_MIN_BYTES or not splittable:
        return _count_pretokens(Path(path).read_bytes().decode("utf-8"), special_tokens)
    bounds = _chunk_bounds(path, size, processes, separator.encode())
    jobs = [(path, a, b, special_tokens) for a, b in itertools.pairwise(bounds)]
    with multiprocessing.Pool(min(processes, len(jobs))) as pool:
        parts = pool.starmap(_count_chunk, jobs)
    return sum(parts, Counter())


def _descending(token: bytes) -> str:
    """A key that sorts byte strings in reverse: each byte ``x`` as the character
    ``256 - x``, then one above them all, so that a prefix sorts after the longer string.
    A pair's key is its two keys joined, and strings compare in C, where a key class's
    ``__lt__`` would run in Python for every tie between equal counts."""
    return "".join(chr(256 - x) for x in token) + "\u0101"


def learn_merges(pretoken_counts: Counter[str], num_merges: int) -> list[Pair]:
    """Up to ``num_merges`` merges (fewer when no pair is left), most frequent pair first.

    Words are lists of token ids (a merge's token gets the next id); ``where`` holds the
    words each pair may occur in, and only those words are rewritten by a merge."""
    tokens = [bytes([b]) for b in range(256)]
    keys = [_descending(t) for t in tokens]
    words = [list(w.encode("utf-8")) for w in pretoken_counts]
    freqs = list(pretoken_counts.values())
    counts: dict[tuple[int, int], int] = defaultdict(int)
    where: dict[tuple[int, int], set[int]] = defaultdict(set)
    for index, (word, freq) in enumerate(zip(words, freqs, strict=True)):
        for pair in itertools.pairwise(word):
            counts[pair] += freq
            where[pair].add(index)
    # (−count, the pair's descending key, pair): the smallest is the most frequent pair,
    # ties to the greater pair of byte strings.
    heap = [(-c, keys[a] + keys[b], (a, b)) for (a, b), c in counts.items()]
    heapq.heapify(heap)
    merges: list[Pair] = []
    while len(merges) < num_merges:
        # Entries go stale when a count changes (a fresh one is pushed then): skip those.
        while heap and counts.get(heap[0][2], 0) != -heap[0][0]:
            heapq.heappop(heap)
        if not heap:
            break
        best = heapq.heappop(heap)[2]
        first, second = best
        merged = len(tokens)
        tokens.append(tokens[first] + tokens[second])
        keys.append(_descending(tokens[merged]))
        merges.append((tokens[first], tokens[second]))
        delta: dict[tuple[int, int], int] = defaultdict(int)
        for index in where.pop(best):
            word, freq = words[index], freqs[index]
            new, i, last = [], 0, len(word) - 1
            while i <= last:
                if i < last and word[i] == first and word[i + 1] == second:
                    new.append(merged)
                    i += 2
                else:
                    new.append(word[i])
                    i += 1
            for pair in itertools.pairwise(word):
                delta[pair] -= freq
            for pair in itertools.pairwise(new):
                delta[pair] += freq
                if merged in pair:
                    where[pair].add(index)
            words[index] = new
        for pair, change in delta.items():
            if change:
                count = counts[pair] + change
                if count > 0:
                    counts[pair] = count
                    heapq.heappush(heap, (-count, keys[pair[0]] + keys[pair[1]], pair))
                else:
                    del counts[pair]
    return merges


def train_bpe(
    input_path: str | PathLike[str],
    vocab_size: int,
    special_tokens: list[str],
    num_processes: int | None = None,
) -> tuple[dict[int, bytes], list[Pair]]:
    """The vocabulary (ids as in the module docstring) and the merges, in the order made, of
    a BPE tokenizer of at most ``vocab_size`` tokens trained on the UTF-8 file ``input_path``."""
    special_tokens = list(dict.fromkeys(special_tokens))
    if any(not isinstance(s, str) or not s for s in special_tokens):
        raise ValueError(f"train_bpe: special tokens must be non-empty strings: {special_tokens}")
    base = 256 + len(special_tokens)
    if vocab_size < base:
        raise ValueError(
            f"train_bpe: vocab_size {vocab_size} is less than the 256 byte tokens plus "
            f"{len(special_tokens)} special tokens"
        )
    vocab = {i: bytes([i]) for i in range(256)}
    vocab |= {256 + j: s.encode("utf-8") for j, s in enumerate(special_tokens)}
    merges = learn_merges(count_pretokens(input_path, special_tokens, num_processes),
                          vocab_size - base)  # fmt: skip
    vocab |= {base + k: a + b for k, (a, b) in enumerate(merges)}
    return vocab, merges


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cs336-train-bpe",
        description="Train a byte-level BPE tokenizer on a UTF-8 text file and save it.",
    )
    parser.add_argument("corpus", type=Path, help="UTF-8 text file to train on")
    parser.add_argument("--vocab-size", type=int, required=True, help="tokens in the vocabulary")
    parser.add_argument("--out", type=Path, required=True, help="directory for the two files")
    parser.add_argument(
        "--special-token",
        action="append",
        dest="special_tokens",
        metavar="TOKEN",
        help="a special token (repeatable; default: <|endoftext|>)",
    )
    parser.add_argument(
        "--processes", type=int, help="pre-tokenization processes (default: every core)"
    )
    args = parser.parse_args(argv)
    special_tokens = args.special_tokens or ["<|endoftext|>"]
    if not args.corpus.is_file():
        parser.error(f"no corpus file at {args.corpus}")
    if args.processes is not None and args.processes < 1:
        parser.error(f"--processes must be at least 1, got {args.processes}")
    megabytes = args.corpus.stat().st_size / 1e6

    start = time.perf_counter()
    try:
        vocab, merges = train_bpe(args.corpus, args.vocab_size, special_tokens, args.processes)
    except (UnicodeDecodeError, ValueError) as error:
        parser.error(str(error))
    seconds = time.perf_counter() - start
    tokenizer = Tokenizer(vocab, merges, special_tokens)
    args.out.mkdir(parents=True, exist_ok=True)
    vocab_path, merges_path = args.out / "vocab.json", args.out / "merges.txt"
    tokenizer.save(vocab_path, merges_path)
    print(
        f"trained {len(merges):,} merges ({len(vocab):,} tokens) on {megabytes:.2f} MB in "
        f"{seconds:.2f} s ({megabytes / seconds:.2f} MB/s)"
    )

    start = time.perf_counter()
    with args.corpus.open(encoding="utf-8") as corpus:
        count = sum(1 for _ in tokenizer.encode_iterable(corpus))
    seconds = time.perf_counter() - start
    longest = max(vocab.values(), key=len)
    print(
        f"encoded the corpus in {seconds:.2f} s ({megabytes / seconds:.2f} MB/s): {count:,} "
        f"tokens, {megabytes * 1e6 / count:.2f} bytes per token; longest token {longest!r}"
    )
    print(f"saved {vocab_path} and {merges_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
