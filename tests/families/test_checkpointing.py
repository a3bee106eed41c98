"""Checkpoints: model, optimizer and iteration saved to a path or a file object, and a run
resumed from one that ends bit for bit where the uninterrupted run ends."""

import pytest
import torch

from cs336_harness.adapters.probes import checkpoint as probes

pytestmark = [pytest.mark.family("checkpointing")]


def test_checkpoint_resume(case, adapters, device):
    p = case.params
    out = probes.checkpoint_resume(adapters, **p, device=str(device))
    assert out["bytes_written"] > 0, f"run_save_checkpoint wrote nothing to the {p['target']}"
    assert out["iteration"] == p["steps_before"], (
        f"run_load_checkpoint returned {out['iteration']!r}, but iteration "
        f"{p['steps_before']} was saved"
    )
    straight, resumed = out["uninterrupted"], out["resumed"]
    missing = sorted(straight.keys() - resumed.keys())
    assert not missing, f"after resuming, the training state lacks {missing}"
    # Values, compared on the CPU: where a tensor lives is not the state (torch.optim keeps
    # AdamW's step count on the CPU; a checkpoint loaded with map_location moves it along).
    differ = [
        name for name in straight if not torch.equal(straight[name].cpu(), resumed[name].cpu())
    ]
    assert not differ, (
        f"the resumed run ends differently from the uninterrupted one in {differ} (model "
        "tensors: the weights were not restored; optimizer.*: its state, e.g. the moments "
        "and step counts, was not saved or not loaded)"
    )
