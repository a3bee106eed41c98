"""What turns a training run's text into ids and back: one id per UTF-8 byte, or a BPE
tokenizer read from the files ``cs336-train-bpe`` saves."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from pathlib import Path

from cs336_basics.tokenizer import Tokenizer


class ByteLevel:
    """The byte-level encoding: one id per UTF-8 byte, so the vocabulary is every byte value.
    It has the :class:`Tokenizer` methods the training loop uses."""

    def __init__(self) -> None:
        self.vocab = {i: bytes([i]) for i in range(256)}

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        # Chunk by chunk: a character split across two chunks cannot occur, as chunks are str.
        for text in iterable:
            yield from text.encode("utf-8")

    def decode(self, ids: Iterable[int]) -> str:
        """A byte sequence that is not valid UTF-8 decodes to U+FFFD."""
        return bytes(ids).decode("utf-8", errors="replace")


@functools.cache
def load_tokenizer(vocab: Path, merges: Path, special_tokens: tuple[str, ...]) -> Tokenizer:
    """The tokenizer saved in ``vocab`` and ``merges``, read once per process: the config's
    checks, the corpus encoding and the sample all ask for it."""
    for path in (vocab, merges):
        if not path.is_file():
            raise FileNotFoundError(
                f"no tokenizer file {path}: make it with `uv run cs336-train-bpe CORPUS "
                f"--vocab-size N --out {path.parent}` (or `make tokenizer`)"
            )
    return Tokenizer.from_files(vocab, merges, list(special_tokens))
