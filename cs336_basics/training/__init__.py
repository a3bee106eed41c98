"""Train the bundled :class:`TransformerLM` on a text corpus: ``cs336-train --config FILE``
(docs/model.md, "Training a model"). One module per concept: `config` (the TOML config and
its ``[tokenizer]`` table), `codecs` (text to ids: bytes or BPE), `corpus` (the ids, split
for validation), `checkpoint_files` (where checkpoints go, the latest), `loss_curve` (CSV
and PNG), `loop` (training and evaluation; why a resumed run is bit for bit the
uninterrupted one), `sampling`, and `cli`, the command."""

from cs336_basics.training.checkpoint_files import (
    checkpoint_path,
    latest_checkpoint,
    save_step_checkpoint,
)
from cs336_basics.training.cli import main
from cs336_basics.training.codecs import ByteLevel, load_tokenizer
from cs336_basics.training.config import TokenizerFiles, TrainConfig
from cs336_basics.training.corpus import corpus_ids, ids_dtype, split_corpus
from cs336_basics.training.loop import build, evaluate, train
from cs336_basics.training.loss_curve import (
    CSV_COLUMNS,
    CSV_NAME,
    PNG_NAME,
    plot_curve,
    read_curve_csv,
    write_curve_csv,
)
from cs336_basics.training.sampling import sample

__all__ = [
    "CSV_COLUMNS",
    "CSV_NAME",
    "PNG_NAME",
    "ByteLevel",
    "TokenizerFiles",
    "TrainConfig",
    "build",
    "checkpoint_path",
    "corpus_ids",
    "evaluate",
    "ids_dtype",
    "latest_checkpoint",
    "load_tokenizer",
    "main",
    "plot_curve",
    "read_curve_csv",
    "sample",
    "save_step_checkpoint",
    "split_corpus",
    "train",
    "write_curve_csv",
]
