"""checkpoints that restore model and optimizer but return iteration 0."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"checkpointing"})


def run_save_checkpoint(model, optimizer, iteration, out):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, out)


def run_load_checkpoint(src, model, optimizer):
    state = torch.load(src, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return 0
