"""get_batch: windows of the dataset from every valid start, uniformly, labels shifted by one.

The starts are random, so the check is statistical: over 6400 windows, every valid start
must appear, none past the end, and each start's count must lie within 7 standard
deviations of its binomial mean. A correct sampler fails that with probability below 1e-9
per case (7σ two-sided is 2.6e-12, times at most 120 starts; a start missing altogether is
rarer still), while a sampler that never draws the last start fails it every time.
"""

import math

import pytest
import torch

from cs336_harness.adapters.probes import training as probes

pytestmark = pytest.mark.family("data_loading")

SIGMAS = 7


def _sample(case, adapters, device: str, calls=None):
    p = case.params
    return probes.get_batch_samples(
        adapters,
        dataset=case["dataset"],
        batch_size=p["batch_size"],
        context_length=p["context_length"],
        calls=calls or p["calls"],
        device=device,
        memmap=p["memmap"],
    )


def test_get_batch(case, adapters, device):
    # The dataset stays a NumPy array (the family's case_on_device); the batch goes to
    # `--device`, named as its tensors name it (`cuda:0`), which is what they must report.
    p, data = case.params, case["dataset"]
    context, first = p["context_length"], int(data[0])
    out = _sample(case, adapters, str(device))
    x, y = out["x"], out["y"]
    rows = p["calls"] * p["batch_size"]
    assert out["devices"] == [str(device)], (
        f"asked for device {str(device)!r}, got tensors on {out['devices']}"
    )
    source = "the uint16 memmap" if p["memmap"] else f"the {data.dtype} array"
    assert out["dtypes"] == [str(torch.int64)], (
        f"x and y have dtype {' and '.join(out['dtypes'])}; token ids must be torch.long "
        f"(int64), whatever the dtype of the dataset ({source}): the embedding and the loss "
        "index with them. Convert the batch, e.g. torch.from_numpy(...).long()"
    )
    for name, t in (("x", x), ("y", y)):
        assert tuple(t.shape) == (rows, context), (
            f"{name}: shape {tuple(t.shape)} over {p['calls']} calls, expected "
            f"(batch_size, context_length) = ({p['batch_size']}, {context}) per call"
        )
    starts = x[:, 0] - first
    valid = len(data) - context  # starts 0 … len − context − 1: the label needs one more id
    assert starts.min() >= 0 and starts.max() < valid, (
        f"a window starts at index {int(starts.max())} (or {int(starts.min())}); valid starts "
        f"are 0 … {valid - 1}, since the labels need the id after the window"
    )
    windows = starts[:, None] + torch.arange(context)
    assert torch.equal(x, data[windows]), "x is not a run of consecutive dataset ids"
    assert torch.equal(y, data[windows + 1]), (
        "y is not x shifted by one (the dataset ids following each position of x)"
    )
    counts = torch.bincount(starts, minlength=valid).tolist()
    never = [s for s, c in enumerate(counts) if c == 0]
    assert not never, f"starts never drawn in {rows} windows: {never} (of 0 … {valid - 1})"
    mean, sd = rows / valid, math.sqrt(rows * (1 / valid) * (1 - 1 / valid))
    worst = max(range(valid), key=lambda s: abs(counts[s] - mean))
    assert abs(counts[worst] - mean) <= SIGMAS * sd, (
        f"start {worst} drawn {counts[worst]} times in {rows} windows; a uniform sampler "
        f"draws each of the {valid} starts {mean:.0f} ± {sd:.0f} times"
    )


@pytest.mark.hardening("upstream checks the device on CUDA machines only; 'meta' checks it here")
@pytest.mark.trivial("any tensors made on the device pass")
def test_get_batch_honours_the_device(case, adapters):
    out = _sample(case, adapters, device="meta", calls=1)
    assert out["devices"] == ["meta"], (
        f"asked for device 'meta', got tensors on {out['devices']}: move the batch to `device`"
    )
