"""get_batch drawing starts from 0 … len − context − 2: the last valid start never comes up."""

import numpy as np
import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"data_loading"})


def run_get_batch(dataset, batch_size, context_length, device):
    starts = np.random.randint(0, len(dataset) - context_length - 1, size=batch_size)
    x = np.stack([dataset[s : s + context_length] for s in starts]).astype(np.int64)
    y = np.stack([dataset[s + 1 : s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
