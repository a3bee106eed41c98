"""Train the bundled :class:`TransformerLM` on a text corpus: ``cs336-train --config FILE``.

Text becomes ids byte by byte (vocab 256), or with a BPE tokenizer made by
``cs336-train-bpe`` when the config has a ``[tokenizer]`` table. The run trains with AdamW,
the cosine schedule with warm-up and gradient clipping, evaluates on a held-out tail of the
corpus, checkpoints periodically, resumes from the latest checkpoint, and ends with a loss
curve (CSV and PNG) and a sample. One concept per module:

- `config`: :class:`TrainConfig`, read from TOML, and its ``[tokenizer]`` table;
- `codecs`: bytes or a BPE tokenizer, what turns text into ids and back;
- `corpus`: the corpus encoded as ids, and its split into training and validation;
- `checkpoint_files`: where a run's checkpoints go, and the latest of them;
- `loss_curve`: the loss curve's CSV and PNG;
- `loop`: the training loop and the evaluation (the choice that makes a resumed run bit for
  bit the uninterrupted one is explained there);
- `sampling`: a sample from the trained model;
- `cli`: the ``cs336-train`` command.
"""

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
