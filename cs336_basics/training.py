"""Train the bundled :class:`TransformerLM` on a text corpus: ``cs336-train --config FILE``.

Text becomes ids byte by byte (vocab 256), or with a BPE tokenizer made by
``cs336-train-bpe`` when the config has a ``[tokenizer]`` table. The run trains with AdamW,
the cosine schedule with warm-up and gradient clipping, evaluates on a held-out tail of the
corpus, checkpoints periodically, resumes from the latest checkpoint, and ends with a loss
curve (CSV and PNG) and a sample.

The non-obvious choice: every step's batch (and its dropout masks) is drawn from a fresh
``np.random.default_rng([seed, step])``, so the data order is a function of (seed, step)
alone and a resumed run is bit for bit the uninterrupted one, with no RNG state stored in
the checkpoint.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import math
import os
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from cs336_basics._checks import check_positive_int
from cs336_basics.adamw import AdamW
from cs336_basics.checkpoint import load_checkpoint, save_checkpoint
from cs336_basics.config import ModelConfig
from cs336_basics.cross_entropy import cross_entropy
from cs336_basics.data import get_batch
from cs336_basics.decoding import generate
from cs336_basics.gradient_clipping import clip_gradients
from cs336_basics.lr_schedule import cosine_lr_schedule
from cs336_basics.tokenizer import Tokenizer
from cs336_basics.transformer_lm import TransformerLM

_OWNER = "TrainConfig"
CSV_NAME = "loss_curve.csv"
PNG_NAME = "loss_curve.png"
CSV_COLUMNS = ("step", "train_loss", "val_loss", "lr")


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


@dataclass(frozen=True)
class TokenizerFiles:
    """A BPE tokenizer as ``cs336-train-bpe`` saves it (see :meth:`Tokenizer.from_files`)."""

    vocab: Path
    merges: Path
    special_tokens: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], base_dir: Path) -> TokenizerFiles:
        """The ``[tokenizer]`` table: ``vocab`` and ``merges`` paths (relative to
        ``base_dir``), optional ``special_tokens``."""
        unknown = sorted(set(values) - {"vocab", "merges", "special_tokens"})
        if unknown:
            raise ValueError(f"{_OWNER}: unknown key(s) {unknown} in [tokenizer]")
        paths = {}
        for name in ("vocab", "merges"):
            if not isinstance(values.get(name), str):
                raise TypeError(
                    f"{_OWNER}: [tokenizer] {name} must be a path string, got {values.get(name)!r}"
                )
            paths[name] = Path(os.path.normpath(base_dir / values[name]))
        specials = values.get("special_tokens", [])
        if not isinstance(specials, list) or not all(isinstance(s, str) for s in specials):
            raise TypeError(
                f"{_OWNER}: [tokenizer] special_tokens must be a list of strings, got {specials!r}"
            )
        return cls(paths["vocab"], paths["merges"], tuple(specials))

    def load(self) -> Tokenizer:
        """The tokenizer, read once per process: the config's checks, the corpus encoding and
        the sample all ask for it."""
        return _load_tokenizer(self)


@functools.cache
def _load_tokenizer(files: TokenizerFiles) -> Tokenizer:
    for path in (files.vocab, files.merges):
        if not path.is_file():
            raise FileNotFoundError(
                f"no tokenizer file {path}: make it with `uv run cs336-train-bpe CORPUS "
                f"--vocab-size N --out {path.parent}` (or `make tokenizer`)"
            )
    return Tokenizer.from_files(files.vocab, files.merges, list(files.special_tokens))


def ids_dtype(vocab_size: int) -> type[np.unsignedinteger]:
    """The smallest unsigned integer type that holds every id."""
    return next(t for t in (np.uint8, np.uint16, np.uint32) if vocab_size <= np.iinfo(t).max + 1)


@dataclass(frozen=True)
class TrainConfig:
    """One training run: the corpus, the model, the optimisation and the bookkeeping.

    Read from TOML by :meth:`from_toml`: the fields below as top-level keys, the model
    (every :class:`ModelConfig` key except ``vocab_size``, which the encoding fixes: 256 bytes,
    or the tokenizer's vocabulary) as a ``[model]`` table, and optionally a ``[tokenizer]``
    table (:class:`TokenizerFiles`). Relative paths in the file are relative to the file.
    ``lr_decay_steps`` is the schedule's ``cosine_cycle_iters`` and defaults to ``max_steps``;
    set it when a run is to be extended with ``--resume --max-steps``, so the schedule of the
    steps already taken stays the same. Construction validates every field and raises an error
    naming it.
    """

    corpus: Path
    out_dir: Path
    model: ModelConfig
    tokenizer: TokenizerFiles | None = None
    batch_size: int = 16
    max_steps: int = 1000
    max_lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_steps: int = 50
    lr_decay_steps: int | None = None
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    val_fraction: float = 0.1
    eval_every: int = 100
    eval_batches: int = 4
    checkpoint_every: int = 500
    seed: int = 0
    device: str = "cpu"
    sample_prompt: str = "\n"
    sample_tokens: int = 300
    temperature: float = 0.8
    top_p: float = 0.95

    def __post_init__(self) -> None:
        for name in ("corpus", "out_dir"):
            if not isinstance(getattr(self, name), Path):
                raise TypeError(f"{_OWNER}: {name} must be a path, got {getattr(self, name)!r}")
        if not isinstance(self.model, ModelConfig):
            raise TypeError(f"{_OWNER}: model must be a ModelConfig, got {self.model!r}")
        if not isinstance(self.tokenizer, TokenizerFiles | None):
            raise TypeError(
                f"{_OWNER}: tokenizer must be TokenizerFiles or None, got {self.tokenizer!r}"
            )
        for name in (
            "batch_size",
            "max_steps",
            "eval_every",
            "eval_batches",
            "checkpoint_every",
            "sample_tokens",
        ):
            check_positive_int(_OWNER, name, getattr(self, name))
        for name in ("warmup_steps", "seed"):
            _check_int(name, getattr(self, name), minimum=0)
        if self.lr_decay_steps is not None:
            _check_int("lr_decay_steps", self.lr_decay_steps, minimum=self.warmup_steps)
        elif self.warmup_steps > self.max_steps:
            raise ValueError(
                f"{_OWNER}: warmup_steps={self.warmup_steps} exceeds max_steps={self.max_steps} "
                "(the cosine decay runs until max_steps unless lr_decay_steps is set)"
            )
        _check_range("max_lr", self.max_lr, 0, math.inf)
        _check_range("min_lr", self.min_lr, 0, self.max_lr, "max_lr")
        _check_range("weight_decay", self.weight_decay, 0, math.inf)
        _check_range("beta1", self.beta1, 0, 1, "1", high_open=True)
        _check_range("beta2", self.beta2, 0, 1, "1", high_open=True)
        _check_range("grad_clip", self.grad_clip, 0, math.inf, low_open=True)
        _check_range("val_fraction", self.val_fraction, 0, 1, "1", low_open=True, high_open=True)
        _check_range("temperature", self.temperature, 0, math.inf)
        _check_range("top_p", self.top_p, 0, 1, "1", low_open=True)
        for name in ("device", "sample_prompt"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise TypeError(
                    f"{_OWNER}: {name} must be a non-empty string, got {getattr(self, name)!r}"
                )
        try:
            torch.device(self.device)
        except RuntimeError as error:
            raise ValueError(f"{_OWNER}: device={self.device!r} is not a device: {error}") from None

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], base_dir: Path) -> TrainConfig:
        """Build from TOML-style keys (see the class docstring); paths relative to ``base_dir``."""
        values = dict(values)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ValueError(f"{_OWNER}: unknown key(s) {unknown}; known keys are {sorted(fields)}")
        missing = [name for name in ("corpus", "out_dir", "model") if name not in values]
        if missing:
            raise ValueError(f"{_OWNER}: missing required key(s) {missing}")
        model = values["model"]
        if not isinstance(model, Mapping):
            raise TypeError(f"{_OWNER}: model must be a [model] table, got {model!r}")
        if "vocab_size" in model:
            raise ValueError(
                f"{_OWNER}: [model] vocab_size is fixed by the encoding (256 bytes, or the "
                "[tokenizer]'s vocabulary); remove it"
            )
        if "tokenizer" in values:
            if not isinstance(values["tokenizer"], Mapping):
                raise TypeError(f"{_OWNER}: tokenizer must be a [tokenizer] table")
            values["tokenizer"] = TokenizerFiles.from_dict(values["tokenizer"], base_dir)
        codec = values["tokenizer"].load() if "tokenizer" in values else ByteLevel()
        values["model"] = ModelConfig.from_dict({**model, "vocab_size": len(codec.vocab)})
        for name in ("corpus", "out_dir"):
            if not isinstance(values[name], str):
                raise TypeError(f"{_OWNER}: {name} must be a path string, got {values[name]!r}")
            values[name] = Path(os.path.normpath(base_dir / values[name]))
        return cls(**values)

    @classmethod
    def from_toml(cls, path: str | Path) -> TrainConfig:
        """Read a TOML file; any error names the file and the offending key."""
        path = Path(path)
        try:
            with path.open("rb") as file:
                values = tomllib.load(file)
            return cls.from_dict(values, path.parent)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{path}: {error}") from error

    def codec(self) -> Tokenizer | ByteLevel:
        """What turns text into ids and back: the tokenizer, or bytes."""
        codec = ByteLevel() if self.tokenizer is None else self.tokenizer.load()
        if len(codec.vocab) != self.model.vocab_size:
            raise ValueError(
                f"{_OWNER}: the encoding has {len(codec.vocab)} ids but model.vocab_size is "
                f"{self.model.vocab_size}"
            )
        return codec

    @property
    def decay_steps(self) -> int:
        """The step at which the cosine reaches ``min_lr``: ``lr_decay_steps`` or ``max_steps``."""
        return self.max_steps if self.lr_decay_steps is None else self.lr_decay_steps


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{_OWNER}: {name} must be an int, got {name}={value!r}")
    if value < minimum:
        raise ValueError(f"{_OWNER}: {name} must be ≥ {minimum}, got {name}={value}")


def _check_range(
    name: str,
    value: object,
    low: float,
    high: float,
    high_name: str | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{_OWNER}: {name} must be a number, got {name}={value!r}")
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high:
        bounds = f"{'(' if low_open else '['}{low}, {high_name or high}{')' if high_open else ']'}"
        raise ValueError(f"{_OWNER}: {name} must be in {bounds}, got {name}={value}")


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


@torch.no_grad()
def evaluate(
    model: TransformerLM,
    val_ids: npt.NDArray[np.integer],
    batch_size: int,
    num_batches: int,
    device: torch.device,
) -> float:
    """Mean next-token loss on ``num_batches · batch_size`` windows spread evenly over
    ``val_ids``: the same windows every time, so successive evaluations compare."""
    context = model.context_length
    starts = np.linspace(0, len(val_ids) - context - 1, num_batches * batch_size).round()
    was_training = model.training
    model.eval()
    losses = []
    for batch_starts in np.split(starts.astype(np.int64), num_batches):
        windows = np.stack([val_ids[s : s + context + 1] for s in batch_starts]).astype(np.int64)
        batch = torch.from_numpy(windows).to(device)
        losses.append(cross_entropy(model(batch[:, :-1]), batch[:, 1:]).item())
    model.train(was_training)
    return float(np.mean(losses))


def checkpoint_path(out_dir: Path, step: int) -> Path:
    """Where the checkpoint of ``step`` goes (zero-padded, so names sort by step)."""
    return out_dir / "checkpoints" / f"step_{step:07d}.pt"


def latest_checkpoint(out_dir: Path) -> Path | None:
    """The checkpoint of the highest step in ``out_dir``, or None."""
    found = (out_dir / "checkpoints").glob("step_*.pt")
    return max(found, key=lambda path: int(path.stem.removeprefix("step_")), default=None)


def _save(model: TransformerLM, optimizer: AdamW, step: int, out_dir: Path) -> None:
    path = checkpoint_path(out_dir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed, so an interrupted save never leaves a truncated "latest".
    partial = path.with_suffix(".partial")
    save_checkpoint(model, optimizer, step, partial)
    os.replace(partial, path)


def _format(value: float) -> str:
    return "" if math.isnan(value) else repr(value)


def write_curve_csv(history: Sequence[dict[str, float]], path: Path) -> None:
    """One row per step (``CSV_COLUMNS``); a value not measured at a step is left empty."""
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_COLUMNS)
        for row in history:
            writer.writerow([int(row["step"])] + [_format(row[c]) for c in CSV_COLUMNS[1:]])


def read_curve_csv(path: Path) -> list[dict[str, float]]:
    """The rows :func:`write_curve_csv` wrote (empty cells as NaN); [] if there is no file."""
    if not path.exists():
        return []
    with path.open(newline="") as file:
        return [
            {c: float(row[c]) if row[c] else math.nan for c in CSV_COLUMNS}
            for row in csv.DictReader(file)
        ]


def plot_curve(
    history: Sequence[dict[str, float]], path: Path, title: str, vocab_size: int
) -> None:
    """Train and validation loss (top) and learning rate (bottom) against the step."""
    # Imported here: matplotlib costs half a second that importing the training command
    # (the tests do) should not pay. A bare Figure, never pyplot: no GUI backend is chosen
    # and the PNG is drawn by Agg.
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 5), layout="constrained")
    loss_ax, lr_ax = figure.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    steps = np.array([row["step"] for row in history])
    for column, style, label in (
        ("train_loss", {"linewidth": 0.8, "alpha": 0.6}, "train (batch)"),
        ("val_loss", {"marker": "o", "markersize": 3}, "validation"),
    ):
        values = np.array([row[column] for row in history])
        seen = ~np.isnan(values)
        loss_ax.plot(steps[seen], values[seen], label=label, **style)
    loss_ax.axhline(
        math.log(vocab_size), color="grey", linestyle=":", label=f"uniform (ln {vocab_size})"
    )
    loss_ax.set_ylabel("loss (nats per token)")
    loss_ax.set_title(title)
    loss_ax.legend()
    loss_ax.grid(alpha=0.3)
    lrs = np.array([row["lr"] for row in history])
    seen = ~np.isnan(lrs)
    lr_ax.plot(steps[seen], lrs[seen], color="tab:green")
    lr_ax.set_xlabel("step")
    lr_ax.set_ylabel("learning rate")
    lr_ax.grid(alpha=0.3)
    figure.savefig(path, dpi=120)


def build(config: TrainConfig) -> tuple[TransformerLM, AdamW]:
    """The freshly initialised model (seeded by ``config.seed``) and its optimizer."""
    device = torch.device(config.device)
    try:
        torch.empty(0, device=device)
    except (AssertionError, RuntimeError) as error:
        raise ValueError(f"device {config.device!r} is not usable here: {error}") from None
    torch.manual_seed(config.seed)
    model = TransformerLM.from_config(config.model, device=device)
    optimizer = AdamW(
        model.parameters(),
        lr=config.max_lr,
        betas=(config.beta1, config.beta2),
        weight_decay=config.weight_decay,
    )
    return model, optimizer


def train(config: TrainConfig, *, resume: bool = False, quiet: bool = False) -> TransformerLM:
    """Run (or with ``resume``, continue) training to ``config.max_steps``; return the model.

    Writes ``checkpoints/step_*.pt`` every ``checkpoint_every`` steps and at the end, and
    ``loss_curve.csv`` (also at every checkpoint) and ``loss_curve.png`` to ``out_dir``.
    Refuses to start afresh over an existing run, and to resume without a checkpoint.
    """
    console = Console(stderr=True, quiet=quiet)
    device = torch.device(config.device)
    codec = config.codec()
    ids = corpus_ids(config.corpus, codec)
    console.print(
        f"{config.corpus.name}: {len(ids):,} tokens of a vocabulary of {len(codec.vocab):,}"
    )
    train_ids, val_ids = split_corpus(ids, config.val_fraction, config.model.context_length)
    model, optimizer = build(config)
    out_dir, csv_path = config.out_dir, config.out_dir / CSV_NAME
    found = latest_checkpoint(out_dir)
    if resume:
        if found is None:
            raise FileNotFoundError(f"--resume: no checkpoint in {out_dir / 'checkpoints'}")
        start = load_checkpoint(found, model, optimizer)
        history = [row for row in read_curve_csv(csv_path) if row["step"] <= start]
        console.print(f"resumed from {found} (step {start})")
    elif found is not None:
        raise FileExistsError(
            f"{out_dir} already holds a run (latest checkpoint {found.name}); pass --resume "
            "to continue it, or --out for a new directory"
        )
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        start = 0
        val = evaluate(model, val_ids, config.batch_size, config.eval_batches, device)
        history = [{"step": 0, "train_loss": math.nan, "val_loss": val, "lr": math.nan}]
        console.print(f"step 0: val loss {val:.3f}")

    model.train()
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=quiet) as progress:
        task = progress.add_task("training", total=config.max_steps, completed=start, status="")
        for step in range(start, config.max_steps):
            done = step + 1
            lr = cosine_lr_schedule(
                done, config.max_lr, config.min_lr, config.warmup_steps, config.decay_steps
            )
            for group in optimizer.param_groups:
                group["lr"] = lr
            rng = np.random.default_rng([config.seed, step])
            x, y = get_batch(
                train_ids, config.batch_size, config.model.context_length, device, generator=rng
            )
            # Dropout masks, too, then depend on (seed, step) only.
            torch.manual_seed(int(rng.integers(2**63)))
            loss = cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            clip_gradients(model.parameters(), config.grad_clip)
            optimizer.step()

            row = {"step": done, "train_loss": loss.item(), "val_loss": math.nan, "lr": lr}
            if done % config.eval_every == 0 or done == config.max_steps:
                row["val_loss"] = evaluate(
                    model, val_ids, config.batch_size, config.eval_batches, device
                )
                progress.console.print(f"step {done}: val loss {row['val_loss']:.3f}")
            history.append(row)
            if done % config.checkpoint_every == 0 or done == config.max_steps:
                _save(model, optimizer, done, out_dir)
                write_curve_csv(history, csv_path)
            status = f"loss {row['train_loss']:.3f}  lr {lr:.2e}"
            progress.update(task, completed=done, status=status)

    write_curve_csv(history, csv_path)
    size = sum(p.numel() for p in model.parameters())
    encoding = "byte-level" if config.tokenizer is None else f"BPE {len(codec.vocab):,}"
    title = f"{config.corpus.name}: {size / 1e6:.2f}M-parameter LM, {encoding}"
    plot_curve(history, out_dir / PNG_NAME, title, len(codec.vocab))
    console.print(f"loss curve: {csv_path} and {out_dir / PNG_NAME}")
    return model


def sample(model: TransformerLM, config: TrainConfig, prompt: str) -> str:
    """``prompt`` and up to ``config.sample_tokens`` sampled tokens after it, as text; a
    tokenizer's first special token (``<|endoftext|>`` by convention) ends the sample."""
    device = next(model.parameters()).device
    codec = config.codec()
    prompt_ids = torch.tensor(codec.encode(prompt), device=device, dtype=torch.long)
    specials = config.tokenizer.special_tokens if config.tokenizer else ()
    ids_of = {token: i for i, token in codec.vocab.items()}
    new = generate(
        model,
        prompt_ids,
        config.sample_tokens,
        config.temperature,
        config.top_p,
        end_of_text_id=ids_of[specials[0].encode("utf-8")] if specials else None,
        generator=torch.Generator(device).manual_seed(config.seed),
    )
    return codec.decode(prompt_ids.tolist() + new.tolist())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cs336-train", description=__doc__.splitlines()[0].rstrip(".")
    )
    parser.add_argument("--config", type=Path, required=True, help="TOML training config")
    parser.add_argument("--out", type=Path, help="output directory (overrides out_dir)")
    parser.add_argument("--max-steps", type=int, help="steps to train to (overrides max_steps)")
    parser.add_argument("--device", help="torch device, e.g. cpu or cuda (overrides device)")
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    parser.add_argument(
        "--sample", metavar="PROMPT", help="no training: print a sample from the latest checkpoint"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    args = parser.parse_args(argv)

    overrides = {"out_dir": args.out, "max_steps": args.max_steps, "device": args.device}
    try:
        config = TrainConfig.from_toml(args.config)
        config = dataclasses.replace(
            config, **{k: v for k, v in overrides.items() if v is not None}
        )
    except (OSError, TypeError, ValueError) as error:
        parser.error(str(error))

    try:
        if args.sample is not None:
            found = latest_checkpoint(config.out_dir)
            if found is None:
                parser.error(f"--sample: no checkpoint in {config.out_dir / 'checkpoints'}")
            model, optimizer = build(config)
            load_checkpoint(found, model, optimizer)
            print(sample(model, config, args.sample))
            return 0
        model = train(config, resume=args.resume, quiet=args.quiet)
    except (FileExistsError, FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    print(sample(model, config, config.sample_prompt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
