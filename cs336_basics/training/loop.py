"""The training loop: AdamW, the cosine schedule with warm-up and gradient clipping, an
evaluation on the held-out tail every ``eval_every`` steps, checkpoints, resuming from the
latest, and the loss curve at the end.

The non-obvious choice: every step's batch (and its dropout masks) is drawn from a fresh
``np.random.default_rng([seed, step])``, so the data order is a function of (seed, step)
alone and a resumed run is bit for bit the uninterrupted one, with no RNG state stored in
the checkpoint.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import torch

from cs336_basics.adamw import AdamW
from cs336_basics.checkpoint import load_checkpoint
from cs336_basics.cross_entropy import cross_entropy
from cs336_basics.data import get_batch
from cs336_basics.gradient_clipping import clip_gradients
from cs336_basics.lr_schedule import cosine_lr_schedule
from cs336_basics.training.checkpoint_files import latest_checkpoint, save_step_checkpoint
from cs336_basics.training.compiling import compile_backend, compiled, quiet_complex_fallback
from cs336_basics.training.config import TrainConfig
from cs336_basics.training.corpus import corpus_ids, split_corpus
from cs336_basics.training.loss_curve import (
    CSV_NAME,
    PNG_NAME,
    plot_curve,
    read_curve_csv,
    write_curve_csv,
)
from cs336_basics.transformer_lm import TransformerLM


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
    # Imported here, not at the top: rich's console and progress bar take longer to import
    # than the rest of the package, which the test suite's collection imports every run.
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

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
    backend = compile_backend(config.compile, device)
    forward = model
    if backend is not None:
        forward = compiled(model, backend)
        console.print(f"torch.compile (backend {backend}): the first step compiles the model")
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=quiet) as progress, quiet_complex_fallback():
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
            loss = cross_entropy(forward(x), y)
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
                save_step_checkpoint(model, optimizer, done, out_dir)
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
