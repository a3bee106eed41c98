"""A training run's configuration, read from TOML: :class:`TrainConfig` and its
``[tokenizer]`` table. (The model's own is :class:`cs336_basics.ModelConfig`, its
``[model]`` table.)"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from cs336_basics._checks import check_positive_int
from cs336_basics.config import ModelConfig
from cs336_basics.tokenizer import Tokenizer
from cs336_basics.training.codecs import ByteLevel, load_tokenizer

_OWNER = "TrainConfig"


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
        """The tokenizer, read once per process (:func:`load_tokenizer`)."""
        return load_tokenizer(self.vocab, self.merges, self.special_tokens)


@dataclass(frozen=True)
class TrainConfig:
    """One training run: the corpus, the model, the optimisation and the bookkeeping.

    Read from TOML by :meth:`from_toml`: the fields below as top-level keys, the model
    (every :class:`ModelConfig` key except ``vocab_size``, which the encoding fixes: 256 bytes,
    or the tokenizer's vocabulary) as a ``[model]`` table, and optionally a ``[tokenizer]``
    table (:class:`TokenizerFiles`). Relative paths in the file are relative to the file.
    ``lr_decay_steps`` is the schedule's ``cosine_cycle_iters`` and defaults to ``max_steps``;
    set it when a run is to be extended with ``--resume --max-steps``, so the schedule of the
    steps already taken stays the same. ``compile`` trains the model compiled by
    ``torch.compile``: ``true`` with the backend its device calls for
    (:mod:`cs336_basics.training.compiling`), or a backend's name. Construction validates
    every field and raises an error naming it.
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
    compile: bool | str = False
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
        if not isinstance(self.compile, bool | str) or self.compile == "":
            raise TypeError(
                f"{_OWNER}: compile must be true, false or a torch.compile backend's name, "
                f"got {self.compile!r}"
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
