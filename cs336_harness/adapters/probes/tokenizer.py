"""The tokenizer's probes: BPE training's vocabulary and merges, a tokenizer's encode and
decode."""

from __future__ import annotations

import io
import itertools
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from cs336_harness.adapters.probes.registry import adapter, probe
from cs336_harness.bpe_fingerprint import unpack


def _byte_lists(strings: list[bytes]) -> list[list[int]]:
    return [list(s) for s in strings]


@probe("run_train_bpe")
def bpe_training(
    module: ModuleType, corpus: torch.Tensor, vocab_size: int, special_tokens: list[str]
) -> dict[str, Any]:
    """`run_train_bpe` on a file holding `corpus` (its UTF-8 bytes as a uint8 tensor: the
    wire's strings are capped in length, its tensors are not). Returns the vocabulary as
    `ids` and `tokens` (each a list of byte values) and the merges as pairs of byte-value
    lists: the wire carries no bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.txt"
        path.write_bytes(bytes(corpus.tolist()))
        # As upstream's test calls it: a pathlib.Path, by keyword.
        train = adapter(module, "run_train_bpe")
        vocab, merges = train(input_path=path, vocab_size=vocab_size, special_tokens=special_tokens)
    ids = sorted(vocab)
    return {
        "ids": [int(i) for i in ids],
        "tokens": _byte_lists([bytes(vocab[i]) for i in ids]),
        "merges": [_byte_lists([bytes(a), bytes(b)]) for a, b in merges],
    }


def _vocabulary(
    vocab_flat: torch.Tensor,
    vocab_lengths: torch.Tensor,
    merges_flat: torch.Tensor,
    merges_lengths: torch.Tensor,
    merges_kept: int | None = None,
) -> tuple[list[bytes], list[tuple[bytes, bytes]]]:
    """The stored vocabulary's tokens (ids 0 … V−1 in order) and its merges as pairs; with
    `merges_kept`, its first merges only and the tokens before theirs (a vocabulary of fewer
    merges, the same ids: the stored one ends with its merges' tokens, in order)."""
    tokens = unpack(vocab_flat, vocab_lengths)
    halves = unpack(merges_flat, merges_lengths)
    merges = list(zip(halves[0::2], halves[1::2], strict=True))
    if merges_kept is None or merges_kept >= len(merges):
        return tokens, merges
    return tokens[: len(tokens) - (len(merges) - merges_kept)], merges[:merges_kept]


@probe("get_tokenizer")
def tokenizer_outputs(
    module: ModuleType,
    vocab_flat: torch.Tensor,
    vocab_lengths: torch.Tensor,
    merges_flat: torch.Tensor,
    merges_lengths: torch.Tensor,
    special_tokens: list[str] | None,
    texts: list[str],
    ids_to_decode: list[list[int]],
) -> dict[str, Any]:
    """A tokenizer from the vocabulary (ids 0 … V−1 in order) and merges, stored as in the
    fixtures. For each text: `encode`, `decode` of that, and `encode_iterable` over the text
    as a text file object (which iterates its lines, as upstream's open file does); for each
    id list, `decode`. Each answer is the value or `{"error": ...}`, the error it raised: one
    method's bug (`encode_iterable` calling `next` on an empty file) fails its own test, not
    its neighbours'. NotImplementedError is not caught: an unwritten method is reported so."""
    tokens, merges = _vocabulary(vocab_flat, vocab_lengths, merges_flat, merges_lengths)
    tok = adapter(module, "get_tokenizer")(dict(enumerate(tokens)), merges, special_tokens)
    encoded = _each(lambda text: [int(i) for i in tok.encode(text)], texts)
    return {
        "encoded": encoded,
        # Where encode raised, its error stands for the round trip too.
        "round_trip": [e if isinstance(e, dict) else _each(tok.decode, [e])[0] for e in encoded],
        "iterable": _each(lambda t: [int(i) for i in tok.encode_iterable(io.StringIO(t))], texts),
        "decoded": _each(tok.decode, ids_to_decode),
    }


def _each(method: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """`method(item)` for each item, or `{"error": "Type: message"}` where it raised."""
    answers = []
    for item in items:
        try:
            answers.append(method(item))
        except NotImplementedError:
            raise
        except Exception as error:  # reported to the test, which names the input
            answers.append({"error": f"{type(error).__name__}: {error}"})
    return answers


# Captured when the worker imports its probes, before any code of the submission's runs.
_start_tracing, _stop_tracing = tracemalloc.start, tracemalloc.stop
_traced, _tracing = tracemalloc.get_traced_memory, tracemalloc.is_tracing


class _StreamCut(Exception):
    """The stream ended early: more was pulled than `cut` allows before the first id."""


@probe("get_tokenizer")
def stream_memory(
    module: ModuleType,
    vocab_flat: torch.Tensor,
    vocab_lengths: torch.Tensor,
    merges_flat: torch.Tensor,
    merges_lengths: torch.Tensor,
    special_tokens: list[str] | None,
    lines_flat: torch.Tensor,
    lines_lengths: torch.Tensor,
    lengths: list[int],
    cut: int,
    merges_kept: int,
) -> list[dict[str, Any]]:
    """`encode_iterable` over streams of `lengths` characters: the stored lines, cycled, in a
    text file opened as upstream's test opens its own (code written for a file, which reads
    it or asks its lines, gets one), each stream to a tokenizer of its own, after one pass
    over the lines to warm whatever the tokenizers share. For each stream: `peak`, the most
    the Python heap (tracemalloc) grew above where it began; `first`, the characters pulled
    before the first id came out (None: none came); `pulled`, all pulled; `ids`, how many
    came out; `cut`, whether the stream ended early since `cut` characters were pulled and
    no id had come; `traced`, whether tracemalloc still ran at the end (the submission can
    stop it). The tokenizers have the vocabulary's first `merges_kept` merges: what a stream
    holds does not depend on them, and an encoder whose cost grows with them (every merge
    walked in rank order) then streams in seconds, not minutes."""
    tokens, merges = _vocabulary(
        vocab_flat, vocab_lengths, merges_flat, merges_lengths, merges_kept
    )
    lines = [line.decode("utf-8") for line in unpack(lines_flat, lines_lengths)]
    make = adapter(module, "get_tokenizer")

    def tokenizer() -> Any:
        return make(dict(enumerate(tokens)), merges, special_tokens)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stream.txt"
        _stream(tokenizer(), _written(path, lines, sum(map(len, lines))), cut, traced=False)
        return [_stream(tokenizer(), _written(path, lines, n), cut) for n in lengths]


def _written(path: Path, lines: list[str], length: int) -> Path:
    """`path`, holding `lines` cycled until `length` characters are written."""
    written = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        for line in itertools.cycle(lines):
            if written >= length:
                break
            out.write(line)
            written += len(line)
    return path


class _CountedFile(io.TextIOWrapper):
    """A text file, as `open` gives, that counts the characters its reads hand out (into
    `state`) and ends the stream (`_StreamCut`) once `cut` were handed out before the first
    id. A subclass rather than a wrapper: code that checks for a file, or reads it in
    chunks, sees one."""

    def __init__(self, path: Path, state: dict[str, Any], cut: int):
        super().__init__(path.open("rb"), encoding="utf-8", newline="")
        self._state, self._cut = state, cut

    def _handed(self, text: str) -> str:
        self._state["pulled"] += len(text)
        return text

    def _may_read(self) -> None:
        if self._state["first"] is None and self._state["pulled"] >= self._cut:
            self._state["cut"] = True
            raise _StreamCut

    def __next__(self) -> str:
        self._may_read()
        return self._handed(super().__next__())

    def read(self, size: int | None = -1) -> str:
        self._may_read()
        return self._handed(super().read(size))

    def readline(self, size: int | None = -1) -> str:
        self._may_read()
        return self._handed(super().readline(size))


def _stream(tok: Any, path: Path, cut: int, traced: bool = True) -> dict[str, Any]:
    state: dict[str, Any] = {"pulled": 0, "first": None, "cut": False}
    ids, base = 0, 0
    if traced:
        _start_tracing()
    try:
        with _CountedFile(path, state, cut) as stream:
            base = _traced()[0]
            try:
                for _ in tok.encode_iterable(stream):
                    if state["first"] is None:
                        state["first"] = state["pulled"]
                    ids += 1
            except _StreamCut:
                pass
    finally:
        still = _tracing()
        peak = _traced()[1] - base if still else 0
        if traced:
            _stop_tracing()
    return {"peak": peak, "ids": ids, "traced": still or not traced} | state


@probe("get_tokenizer")
def encode_cost(
    module: ModuleType,
    vocab_flat: torch.Tensor,
    vocab_lengths: torch.Tensor,
    merges_flat: torch.Tensor,
    merges_lengths: torch.Tensor,
    special_tokens: list[str] | None,
    lines_flat: torch.Tensor,
    lines_lengths: torch.Tensor,
    merges_kept: int,
    chars: int,
) -> int:
    """`encode` of the stored lines' first `chars` characters as one text, by a tokenizer of
    the vocabulary's first `merges_kept` merges (and the tokens before them: a vocabulary of
    fewer merges, the same ids); how many ids it gave. What is measured is the call's cost
    (`measured`)."""
    kept, merges = _vocabulary(vocab_flat, vocab_lengths, merges_flat, merges_lengths, merges_kept)
    text = "".join(line.decode("utf-8") for line in unpack(lines_flat, lines_lengths))[:chars]
    tok = adapter(module, "get_tokenizer")(dict(enumerate(kept)), merges, special_tokens)
    return len(tok.encode(text))
