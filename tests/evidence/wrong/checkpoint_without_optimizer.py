"""checkpoints that save and restore the model and iteration, but not the optimizer."""

import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"checkpointing"})


def run_save_checkpoint(model, optimizer, iteration, out):
    torch.save({"model": model.state_dict(), "iteration": iteration}, out)


def run_load_checkpoint(src, model, optimizer):
    state = torch.load(src, weights_only=True)
    model.load_state_dict(state["model"])
    return state["iteration"]
