"""A byte-level BPE tokenizer: GPT-2 pre-tokenization, merges applied by rank, special tokens.

Text is first split at special tokens (the longest wins where two overlap at one position,
so ``<|a|><|a|>`` beats ``<|a|>``); each special token becomes its own id. The text between
them is cut into pre-tokens by GPT-2's pattern, each pre-token is encoded as UTF-8 and its
bytes are merged, lowest merge rank first, until no listed merge applies. Merges never cross
a pre-token or special-token boundary.

Files (:meth:`Tokenizer.from_files`, :meth:`Tokenizer.save`): the vocabulary is a JSON object
mapping each id (a decimal string) to its bytes written as lowercase hex; the merges file
holds one merge per line, in rank order, as the two tokens' hex strings separated by a space.
Hex keeps every byte string (spaces, newlines, invalid UTF-8) on one unambiguous line.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from os import PathLike

import regex

# GPT-2's pre-tokenization pattern (Radford et al., 2019), as in tiktoken's "gpt2" encoding.
GPT2_PATTERN = regex.compile(
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)
# The pattern's contractions look up to three characters ahead ("'ll"), so a pre-token that
# starts closer than this to the end of a stream's buffer may still change as text arrives.
_PATTERN_LOOKAHEAD = 3
# Pre-tokens remembered with their ids; bounded so that a long stream's memory stays flat.
_CACHE_SIZE = 1 << 16


def special_token_pattern(special_tokens: Iterable[str]) -> regex.Pattern[str] | None:
    """An alternation of the special tokens, longest first: the regex engine takes the first
    alternative that matches, so this makes overlapping tokens match longest first."""
    ordered = sorted(set(special_tokens), key=lambda s: (-len(s), s))
    if not ordered:
        return None
    if "" in ordered:
        raise ValueError("special tokens must be non-empty strings, got ''")
    return regex.compile("|".join(regex.escape(s) for s in ordered))


def split_at_special_tokens(
    text: str, pattern: regex.Pattern[str] | None
) -> Iterator[tuple[str, bool]]:
    """``(piece, is_special)`` in order: the special tokens and the (non-empty) text between."""
    start = 0
    if pattern is not None:
        for match in pattern.finditer(text):
            if match.start() > start:
                yield text[start : match.start()], False
            yield match.group(), True
            start = match.end()
    if start < len(text):
        yield text[start:], False


class Tokenizer:
    """Encodes text to ids and back with a byte-level BPE vocabulary and merge list."""

    def __init__(
        self,
        vocab: dict[int, bytes],
        merges: list[tuple[bytes, bytes]],
        special_tokens: list[str] | None = None,
    ):
        self.vocab = dict(vocab)
        self.merges = list(merges)
        self.special_tokens = list(special_tokens or [])
        # A special token missing from the vocabulary gets the next free id (as upstream).
        for token in self.special_tokens:
            if token.encode() not in self.vocab.values():
                self.vocab[max(self.vocab, default=-1) + 1] = token.encode()
        self._ids = {token: i for i, token in self.vocab.items()}
        missing = [b for b in range(256) if bytes([b]) not in self._ids]
        if missing:
            raise ValueError(
                f"Tokenizer: the vocabulary lacks {len(missing)} single-byte tokens "
                f"(first: byte {missing[0]}), so some text could not be encoded"
            )
        self._ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self._special_pattern = special_token_pattern(self.special_tokens)
        self._longest_special = max((len(s) for s in self.special_tokens), default=0)
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_files(
        cls,
        vocab_filepath: str | PathLike[str],
        merges_filepath: str | PathLike[str],
        special_tokens: list[str] | None = None,
    ) -> Tokenizer:
        """Load the hex formats described in the module docstring."""
        with open(vocab_filepath, encoding="utf-8") as f:
            vocab = {int(i): bytes.fromhex(token) for i, token in json.load(f).items()}
        merges = []
        with open(merges_filepath, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 2:
                    raise ValueError(
                        f"{merges_filepath}:{number}: expected two hex tokens, got {line!r}"
                    )
                merges.append((bytes.fromhex(parts[0]), bytes.fromhex(parts[1])))
        return cls(vocab, merges, special_tokens)

    def save(self, vocab_filepath: str | PathLike[str], merges_filepath: str | PathLike[str]):
        """Write the vocabulary and merges in the formats :meth:`from_files` reads."""
        with open(vocab_filepath, "w", encoding="utf-8") as f:
            json.dump({str(i): token.hex() for i, token in sorted(self.vocab.items())}, f)
        with open(merges_filepath, "w", encoding="utf-8") as f:
            f.writelines(f"{a.hex()} {b.hex()}\n" for a, b in self.merges)

    def _encode_pretoken(self, pretoken: str) -> list[int]:
        cached = self._cache.get(pretoken)
        if cached is not None:
            return cached
        parts = [bytes([b]) for b in pretoken.encode("utf-8")]
        while len(parts) > 1:
            ranked = [
                (self._ranks.get(pair, len(self._ranks)), i)
                for i, pair in enumerate(itertools.pairwise(parts))
            ]
            rank, _ = min(ranked)
            if rank == len(self._ranks):
                break
            merged, i = [], 0
            # Every occurrence of the best pair, left to right, as training merged them.
            while i < len(parts):
                if i + 1 < len(parts) and self._ranks.get((parts[i], parts[i + 1])) == rank:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        ids = [self._ids[p] for p in parts]
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.clear()
        self._cache[pretoken] = ids
        return ids

    def _pieces(self, text: str) -> Iterator[tuple[int, str, bool]]:
        """``(start, piece, is_special)`` for every special token and pre-token of ``text``."""
        offset = 0
        for part, special in split_at_special_tokens(text, self._special_pattern):
            if special:
                yield offset, part, True
            else:
                for match in GPT2_PATTERN.finditer(part):
                    yield offset + match.start(), match.group(), False
            offset += len(part)

    def _piece_ids(self, piece: str, special: bool) -> list[int]:
        return [self._ids[piece.encode()]] if special else self._encode_pretoken(piece)

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``."""
        return [i for _, piece, special in self._pieces(text)
                for i in self._piece_ids(piece, special)]  # fmt: skip

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """The ids of the concatenated strings of ``iterable``, the same as ``encode`` of the
        whole text, produced lazily. Pieces are cut from the buffered text and encoded once
        the text that follows can no longer change them: they must start before the last
        piece that begins at least the pattern's lookahead and the longest special token's
        length from the end. So memory stays flat however long the stream is."""
        buffer = ""
        margin = max(_PATTERN_LOOKAHEAD, self._longest_special)
        for chunk in iterable:
            buffer += chunk
            done, keep = [], 0
            for start, piece, special in self._pieces(buffer):
                if start > len(buffer) - margin:
                    break
                done.append((piece, special))
                keep = start
            # The last piece that starts in time is still held back: it may grow.
            for piece, special in done[:-1]:
                yield from self._piece_ids(piece, special)
            buffer = buffer[keep:]
        yield from self.encode(buffer)

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``; byte sequences that are not valid UTF-8 become U+FFFD."""
        try:
            data = b"".join(self.vocab[int(i)] for i in ids)
        except KeyError as error:
            raise IndexError(
                f"Tokenizer.decode: id {error.args[0]} is not in the vocabulary"
            ) from None
        return data.decode("utf-8", errors="replace")
