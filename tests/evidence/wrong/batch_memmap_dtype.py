"""get_batch returning the windows in the dataset's own dtype: from a uint16 memmap, uint16
ids, which an embedding or a loss cannot index with (they need torch.long)."""

import numpy as np
import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"data_loading"})


def run_get_batch(dataset, batch_size, context_length, device):
    starts = np.random.randint(0, len(dataset) - context_length, batch_size)
    x = np.stack([dataset[s : s + context_length] for s in starts])
    y = np.stack([dataset[s + 1 : s + 1 + context_length] for s in starts])
    return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
