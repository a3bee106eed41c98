"""get_batch returning the window itself as its labels."""

import numpy as np
import torch

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"data_loading"})


def run_get_batch(dataset, batch_size, context_length, device):
    starts = np.random.randint(0, len(dataset) - context_length, size=batch_size)
    x = torch.from_numpy(
        np.stack([dataset[s : s + context_length] for s in starts]).astype(np.int64)
    )
    return x.to(device), x.clone().to(device)
