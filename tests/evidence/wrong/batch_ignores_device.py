"""get_batch that leaves the batch on the CPU whatever device is asked for."""

import numpy as np
import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"data_loading"})


def run_get_batch(dataset, batch_size, context_length, device):
    starts = np.random.randint(0, len(dataset) - context_length, size=batch_size)
    w = np.stack([dataset[s : s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(w[:, :-1]), torch.from_numpy(w[:, 1:])
