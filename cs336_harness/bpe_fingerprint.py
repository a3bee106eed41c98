"""A trained BPE model as one integer array, which the diagnosis compares exactly (NumPy only,
for the judge): the merges in order (a bytes, -1, b bytes, -2, ...), -3, then the tokens
sorted (t bytes, -1, ...). Why sorted: docs/checking.md, "Diagnosis: the likely cause of a
wrong output"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

MERGE_HALF = -1  # after a merge's first token, and after each vocabulary token
MERGE_END = -2
VOCABULARY = -3


def unpack(flat: Any, lengths: Any) -> list[bytes]:
    """The byte strings stored as one flat uint8 array (NumPy or torch) and their lengths:
    the fixtures' layout (`cs336_staff/fixturegen/tokenizer_cases.py`)."""
    data = bytes(np.asarray(flat, dtype=np.uint8).tolist())
    sizes = np.asarray(lengths, dtype=np.int64).reshape(-1).tolist()
    ends = np.cumsum(sizes, dtype=np.int64).tolist()
    return [data[end - n : end] for end, n in zip(ends, sizes, strict=True)]


def stored_model(tensors: Mapping[str, Any]) -> tuple[list[bytes], list[tuple[bytes, bytes]]]:
    """The oracle's vocabulary (tokens in id order) and merges, from a `train_bpe` case."""
    tokens = unpack(tensors["vocab_flat"], tensors["vocab_lengths"])
    halves = unpack(tensors["merges_flat"], tensors["merges_lengths"])
    return tokens, list(zip(halves[0::2], halves[1::2], strict=True))


def fingerprint(
    tokens: Iterable[bytes], merges: Iterable[tuple[bytes, bytes]]
) -> NDArray[np.int64]:
    """The model's fingerprint (module docstring): merges in order, then the tokens sorted."""
    out: list[int] = []
    for a, b in merges:
        out += [*a, MERGE_HALF, *b, MERGE_END]
    out.append(VOCABULARY)
    for token in sorted(tokens):
        out += [*token, MERGE_HALF]
    return np.array(out, dtype=np.int64)


def stored(tensors: Mapping[str, Any]) -> NDArray[np.int64]:
    """The fingerprint of the oracle's model in a `train_bpe` case: its expected output."""
    return fingerprint(*stored_model(tensors))
