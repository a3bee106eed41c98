"""`cs336-train` on a tiny model: a resumed run ends bit for bit where an uninterrupted one
does, the loss curve is written, a bad config is refused with an error naming the key, and
a run tokenizes with the files `cs336-train-bpe` saves.

These test the bundled package itself (no family marker, no adapters). Every run is a few
steps of a one-layer model on a short text, through `main` as the command line calls it.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from cs336_basics import Tokenizer, train_bpe
from cs336_basics.bpe_training import main as train_bpe_main
from cs336_basics.training import (
    CSV_NAME,
    PNG_NAME,
    TrainConfig,
    checkpoint_path,
    corpus_ids,
    loop,
    main,
    read_curve_csv,
)

STEPS = 6
# lr_decay_steps pins the schedule to STEPS, so a run stopped at 3 and extended with
# --resume --max-steps takes the same learning rates as one run straight to STEPS.
TINY = f"""
corpus = "corpus.txt"
out_dir = "run"
batch_size = 4
max_steps = {STEPS}
warmup_steps = 2
lr_decay_steps = {STEPS}
eval_every = 3
eval_batches = 2
checkpoint_every = 3
sample_prompt = "The "
sample_tokens = 8

[model]
context_length = 16
d_model = 16
num_layers = 1
num_heads = 2
d_ff = 32
"""
# Multi-byte characters included, so ids span more than ASCII.
TEXT = "The quick brown fox jumps over the lazy dog; naïve café, déjà vu — ça va.\n" * 40


def write_config(directory: Path, text: str = TINY) -> Path:
    (directory / "corpus.txt").write_text(TEXT, encoding="utf-8")
    path = directory / "tiny.toml"
    path.write_text(text)
    return path


def run(config: Path, *args: str) -> None:
    assert main(["--config", str(config), "--quiet", *args]) == 0


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The config of a run made straight to STEPS, in `run/` beside it."""
    config = write_config(tmp_path_factory.mktemp("uninterrupted"))
    run(config)
    return config


@pytest.fixture
def unplotted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs that draw no loss curve: matplotlib takes 0.2 s a PNG, most of what a run of this
    tiny model costs, and only `test_loss_curve_is_written` looks at one (the uninterrupted
    run's, drawn for real)."""
    monkeypatch.setattr(loop, "plot_curve", lambda *args, **kwargs: None)


def assert_identical(a: Any, b: Any, where: str = "checkpoint") -> None:
    """Equal structure, equal plain values, and every tensor equal in dtype and every bit."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b), f"{where}: tensors differ"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys differ"
        for key in a:
            assert_identical(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_identical(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@pytest.mark.parametrize("interruption", ["lost_last_checkpoint", "stopped_then_extended"])
def test_resumed_run_equals_uninterrupted_run(uninterrupted, unplotted, tmp_path, interruption):
    reference = uninterrupted.parent / "run"
    config = write_config(tmp_path)
    if interruption == "lost_last_checkpoint":
        # A crash after step 3's checkpoint was saved, before step 6's.
        shutil.copytree(reference, tmp_path / "run")
        checkpoint_path(tmp_path / "run", STEPS).unlink()
    else:
        run(config, "--max-steps", "3")
    run(config, "--resume")

    expected = torch.load(checkpoint_path(reference, STEPS), weights_only=True)
    got = torch.load(checkpoint_path(tmp_path / "run", STEPS), weights_only=True)
    assert got["iteration"] == STEPS
    assert_identical(expected["model"], got["model"], "model")
    assert_identical(expected["optimizer"], got["optimizer"], "optimizer")
    # Same batches, same losses, to the last digit of the CSV.
    assert (tmp_path / "run" / CSV_NAME).read_text() == (reference / CSV_NAME).read_text()


def test_loss_curve_is_written(uninterrupted):
    out = uninterrupted.parent / "run"
    rows = read_curve_csv(out / CSV_NAME)
    assert [row["step"] for row in rows] == list(range(STEPS + 1))
    assert all(math.isfinite(row["train_loss"]) and row["train_loss"] > 0 for row in rows[1:])
    assert all(math.isfinite(row["lr"]) for row in rows[1:])
    val_steps = [row["step"] for row in rows if not math.isnan(row["val_loss"])]
    assert val_steps == [0, 3, 6]
    assert all(math.isfinite(row["val_loss"]) for row in rows if row["step"] in val_steps)
    assert (out / PNG_NAME).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (("max_steps = 6", "max_step = 6"), "max_step"),
        (("max_steps = 6", "max_steps = -6"), "max_steps"),
        (("max_steps = 6", 'max_steps = "6"'), "max_steps"),
        (("grad_clip", ""), None),
        (("d_ff = 32", "d_ff = 32\nvocab_size = 256"), "vocab_size"),
        (("d_ff = 32", "d_ff = 32\nheads = 2"), "heads"),
        (("num_heads = 2", "num_heads = 3"), "num_heads"),
    ],
    ids=[
        "unknown_key",
        "negative_steps",
        "steps_as_string",
        "valid",
        "vocab_size_given",
        "unknown_model_key",
        "heads_not_dividing",
    ],
)
def test_bad_config_names_the_key(tmp_path, change, named):
    config = write_config(tmp_path, TINY.replace(*change))
    if named is None:
        assert TrainConfig.from_toml(config).max_steps == STEPS
        return
    with pytest.raises(ValueError, match=named) as error:
        TrainConfig.from_toml(config)
    assert str(config) in str(error.value)


def test_bad_override_and_run_directory_errors(tmp_path, capsys):
    config = write_config(tmp_path)
    for args, named in [
        (["--max-steps", "-1"], "max_steps"),
        (["--device", "no-such-device"], "device"),
        (["--resume"], "no checkpoint"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            run(config, *args)
        assert exit_info.value.code == 2
        assert named in capsys.readouterr().err
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    checkpoint_path(tmp_path / "run", 3).touch()
    with pytest.raises(SystemExit):
        run(config)
    assert "already holds a run" in capsys.readouterr().err


BPE_TABLE = """
[tokenizer]
vocab = "bpe/vocab.json"
merges = "bpe/merges.txt"
special_tokens = ["<|endoftext|>"]
"""


def test_bpe_command_saves_what_train_bpe_trains(tmp_path, capsys):
    config = write_config(tmp_path)
    corpus = config.parent / "corpus.txt"
    assert train_bpe_main([str(corpus), "--vocab-size", "300", "--out", str(tmp_path / "bpe")]) == 0
    report = capsys.readouterr().out
    assert "43 merges (300 tokens)" in report and "MB/s" in report and "bytes per token" in report
    vocab, merges = train_bpe(corpus, 300, ["<|endoftext|>"])
    saved = Tokenizer.from_files(tmp_path / "bpe" / "vocab.json", tmp_path / "bpe" / "merges.txt")
    assert saved.vocab == vocab and saved.merges == merges


@pytest.mark.parametrize(
    ("args", "named"),
    [(["missing.txt", "--vocab-size", "300"], "no corpus file"),
     (["corpus.txt", "--vocab-size", "100"], "less than the 256 byte tokens"),
     (["corpus.txt", "--vocab-size", "300", "--processes", "0"], "--processes")],
    ids=["missing_corpus", "vocab_too_small", "no_processes"],
)  # fmt: skip
def test_bpe_command_refuses_bad_arguments(tmp_path, capsys, args, named):
    write_config(tmp_path)
    args = [str(tmp_path / args[0]), *args[1:], "--out", str(tmp_path / "bpe")]
    with pytest.raises(SystemExit) as exit_info:
        train_bpe_main(args)
    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err


def test_run_with_a_bpe_tokenizer(unplotted, tmp_path, capsys):
    config = write_config(tmp_path, TINY + BPE_TABLE)
    with pytest.raises(SystemExit) as exit_info:
        run(config)
    assert exit_info.value.code == 2
    assert "cs336-train-bpe" in capsys.readouterr().err  # the files are not made yet
    train_bpe_main(
        [str(tmp_path / "corpus.txt"), "--vocab-size", "300", "--out", str(tmp_path / "bpe")]
    )
    parsed = TrainConfig.from_toml(config)
    assert parsed.model.vocab_size == 300
    tokenizer = Tokenizer.from_files(
        tmp_path / "bpe" / "vocab.json", tmp_path / "bpe" / "merges.txt"
    )
    assert corpus_ids(parsed.corpus, parsed.codec()).tolist() == tokenizer.encode(TEXT)
    capsys.readouterr()
    run(config)
    checkpoint = torch.load(checkpoint_path(tmp_path / "run", STEPS), weights_only=True)
    assert checkpoint["model"]["token_embeddings.weight"].shape[0] == 300
    assert capsys.readouterr().out.startswith("The ")  # the sample, decoded by the tokenizer
