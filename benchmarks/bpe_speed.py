"""BPE speed against Hugging Face `tokenizers` (Rust) on the same corpus and vocabulary size.

Training: `cs336_basics.train_bpe` (pre-tokenization in a process per core, incremental
pair counts) and Hugging Face's `BpeTrainer` (threads on every core), each on the same file:
the committed corpus written four times, joined by <|endoftext|>, so that it is past the
size at which pre-tokenization goes parallel. Encoding: `Tokenizer.encode_iterable` over the
corpus's lines (one process) and Hugging Face's `encode_batch` over the same lines (threads
on every core, its fastest path), both with the vocabulary trained above. Each time is the
best of `ROUNDS`, the two libraries alternating.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cs336_basics import Tokenizer, train_bpe
from cs336_staff.oracle import hf_bpe

CORPUS = Path(__file__).resolve().parent.parent / "data" / "shakespeare_tragedies.txt"
SPECIALS = ["<|endoftext|>"]
VOCAB_SIZE = 10_000
COPIES = 4
ROUNDS = 2


def _best(functions: dict[str, Callable[[], object]]) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(ROUNDS):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - start)
    return {name: min(seconds) for name, seconds in times.items()}


def _hf_train(path: Path) -> None:
    tokenizer, trainer = hf_bpe.untrained(VOCAB_SIZE, SPECIALS)
    tokenizer.train([str(path)], trainer)


def measure() -> dict[str, tuple[float, float]]:
    """``{"training" | "encoding": (ours MB/s, Hugging Face MB/s)}``."""
    text = CORPUS.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.txt"
        path.write_text(SPECIALS[0].join([text] * COPIES), encoding="utf-8")
        training_mb = path.stat().st_size / 1e6
        vocab, merges = train_bpe(path, VOCAB_SIZE, SPECIALS)
        training = _best(
            {"ours": lambda: train_bpe(path, VOCAB_SIZE, SPECIALS), "hf": lambda: _hf_train(path)}
        )
    ours = Tokenizer(vocab, merges, SPECIALS)
    theirs = hf_bpe.loaded(vocab, merges, SPECIALS)
    lines = text.splitlines(keepends=True)
    encoding = _best(
        {
            "ours": lambda: sum(1 for _ in ours.encode_iterable(lines)),
            "hf": lambda: theirs.encode_batch(lines, add_special_tokens=False),
        }
    )
    encoding_mb = len(text.encode("utf-8")) / 1e6
    return {
        "training": (training_mb / training["ours"], training_mb / training["hf"]),
        "encoding": (encoding_mb / encoding["ours"], encoding_mb / encoding["hf"]),
    }
