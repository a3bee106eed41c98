"""get_batch returning the positions of the window instead of the ids stored there."""

import numpy as np
import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"data_loading"})


def run_get_batch(dataset, batch_size, context_length, device):
    starts = torch.from_numpy(np.random.randint(0, len(dataset) - context_length, batch_size))
    x = starts[:, None] + torch.arange(context_length)
    return x.to(device), (x + 1).to(device)
