"""The loss curve of a run: a CSV of train loss, validation loss and learning rate per step,
and its plot as a PNG."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

CSV_NAME = "loss_curve.csv"
PNG_NAME = "loss_curve.png"
CSV_COLUMNS = ("step", "train_loss", "val_loss", "lr")


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
