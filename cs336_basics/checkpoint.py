"""Save and restore a training run: model weights, optimizer state and the step reached."""

from __future__ import annotations

import io
import os

import torch

# A binary file is one of io's binary base classes (`open(path, "rb")`, `io.BytesIO`, ...).
# typing.BinaryIO would say so too, but as a protocol it also asks for `name` and `mode`,
# which a BytesIO has not, so `--typecheck` would refuse a correct call with one.
PathOrFile = str | os.PathLike | io.BufferedIOBase | io.RawIOBase


def save_checkpoint(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, iteration: int, out: PathOrFile
) -> None:
    """Write ``model``'s and ``optimizer``'s state dicts and ``iteration`` to a path or an
    open binary file, in one ``torch.save`` so the three can't get out of step."""
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "iteration": int(iteration),
    }
    torch.save(state, out)


def load_checkpoint(
    src: PathOrFile, model: torch.nn.Module, optimizer: torch.optim.Optimizer
) -> int:
    """Restore ``model`` and ``optimizer`` from ``src`` (what `save_checkpoint` wrote) and
    return the saved iteration. The file is read onto the CPU and ``load_state_dict`` copies
    each tensor to its place: the weights into the parameters, wherever they are, and the
    optimizer's state to its parameter's device, but for the step count, which torch.optim
    keeps on the CPU. A run resumed on a GPU so holds what one never stopped holds, where
    mapping the file onto the GPU would leave the step count there. ``weights_only`` loading
    runs no code from the file."""
    state = torch.load(src, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["iteration"])
