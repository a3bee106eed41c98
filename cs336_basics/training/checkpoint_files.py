"""Where a run keeps its checkpoints: one file per step under ``out_dir/checkpoints``, the
latest found by its step."""

from __future__ import annotations

import os
from pathlib import Path

from cs336_basics.adamw import AdamW
from cs336_basics.checkpoint import save_checkpoint
from cs336_basics.transformer_lm import TransformerLM


def checkpoint_path(out_dir: Path, step: int) -> Path:
    """Where the checkpoint of ``step`` goes (zero-padded, so names sort by step)."""
    return out_dir / "checkpoints" / f"step_{step:07d}.pt"


def latest_checkpoint(out_dir: Path) -> Path | None:
    """The checkpoint of the highest step in ``out_dir``, or None."""
    found = (out_dir / "checkpoints").glob("step_*.pt")
    return max(found, key=lambda path: int(path.stem.removeprefix("step_")), default=None)


def save_step_checkpoint(model: TransformerLM, optimizer: AdamW, step: int, out_dir: Path) -> None:
    """Save the checkpoint of ``step`` at :func:`checkpoint_path`."""
    path = checkpoint_path(out_dir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed, so an interrupted save never leaves a truncated "latest".
    partial = path.with_suffix(".partial")
    save_checkpoint(model, optimizer, step, partial)
    os.replace(partial, path)
