"""checkpoints that open `out` as a path, so a file object fails."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"checkpointing"})


def run_save_checkpoint(model, optimizer, iteration, out):
    with open(out, "wb") as f:
        torch.save({"m": model.state_dict(), "o": optimizer.state_dict(), "i": iteration}, f)


def run_load_checkpoint(src, model, optimizer):
    with open(src, "rb") as f:
        state = torch.load(f, weights_only=True)
    model.load_state_dict(state["m"])
    optimizer.load_state_dict(state["o"])
    return state["i"]
