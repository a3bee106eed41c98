"""Random training batches from one long array of token ids."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
from jaxtyping import Int
from torch import Tensor


def get_batch(
    dataset: npt.NDArray[np.integer],
    batch_size: int,
    context_length: int,
    device: str | torch.device,
    generator: np.random.Generator | None = None,
) -> tuple[Int[Tensor, " batch_size context_length"], Int[Tensor, " batch_size context_length"]]:
    """``batch_size`` windows of ``context_length`` ids and their next-token labels.

    Starts are drawn uniformly from every valid start ``0 … len(dataset) − context_length − 1``
    (the labels need one id past the window), independently, with replacement. Only the
    sampled windows are read, so ``dataset`` may be a ``np.memmap`` far larger than memory.
    Both tensors are int64 on ``device``.
    """
    if dataset.ndim != 1 or not np.issubdtype(dataset.dtype, np.integer):
        raise ValueError(
            "get_batch: dataset must be a 1-D array of integer token ids, got "
            f"shape {dataset.shape}, dtype {dataset.dtype}"
        )
    starts_available = len(dataset) - context_length
    if batch_size <= 0 or context_length <= 0 or starts_available <= 0:
        raise ValueError(
            f"get_batch: need batch_size > 0 and 0 < context_length < len(dataset), got "
            f"batch_size={batch_size}, context_length={context_length}, len={len(dataset)}"
        )
    rng = generator if generator is not None else np.random.default_rng()
    starts = rng.integers(0, starts_available, size=batch_size)
    windows = np.stack([dataset[s : s + context_length + 1] for s in starts]).astype(np.int64)
    batch = torch.from_numpy(windows).to(device)
    return batch[:, :-1], batch[:, 1:]
