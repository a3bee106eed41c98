"""The corpus as ids: encoded as a stream, and split into a training head and a validation
tail."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from cs336_basics.tokenizer import Tokenizer
from cs336_basics.training.codecs import ByteLevel


def ids_dtype(vocab_size: int) -> type[np.unsignedinteger]:
    """The smallest unsigned integer type that holds every id."""
    return next(t for t in (np.uint8, np.uint16, np.uint32) if vocab_size <= np.iinfo(t).max + 1)


def corpus_ids(path: Path, codec: Tokenizer | ByteLevel) -> npt.NDArray[np.unsignedinteger]:
    """The ids of the text file at ``path``, ``(n_ids,)``, encoded line by line as a stream
    (so a large corpus is never held as one string), in the smallest dtype that holds them."""
    with path.open(encoding="utf-8") as corpus:
        return np.fromiter(codec.encode_iterable(corpus), dtype=ids_dtype(len(codec.vocab)))


def split_corpus(
    ids: npt.NDArray[np.integer], val_fraction: float, context_length: int
) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.integer]]:
    """``(train, val)``: the first ``1 − val_fraction`` of ``ids`` and the rest, each long
    enough for one window of ``context_length`` ids plus its label."""
    cut = int(len(ids) * (1 - val_fraction))
    train, val = ids[:cut], ids[cut:]
    for name, part in (("train", train), ("validation", val)):
        if len(part) <= context_length:
            raise ValueError(
                f"the {name} split has {len(part)} ids, too few for context_length="
                f"{context_length} (corpus of {len(ids)} ids, val_fraction={val_fraction})"
            )
    return train, val
