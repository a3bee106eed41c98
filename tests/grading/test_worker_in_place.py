"""An adapter that writes into its input under the grader: the worker names the changed
arguments, and the judge fails the test naming only arguments it sent itself, since
whatever the worker sends is the submission's word."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cs336_harness.adapters.loader import load_module
from cs336_harness.grading.judge.remote import RemoteAdapters
from cs336_harness.grading.sandbox.limits import Limits
from cs336_harness.grading.worker.process import answer
from cs336_harness.grading.worker.protocol import HEADER, decode
from cs336_harness.rules.runtime import Watcher

ADAPTERS = """\
def run_softmax(in_features, dim):
    x = in_features.sub_(in_features.amax(dim=dim, keepdim=True))
    return x.exp() / x.exp().sum(dim=dim, keepdim=True)


def run_silu(in_features):
    return in_features * in_features.sigmoid()
"""


def _no_worker(serial: int):
    raise AssertionError("the replies are given: no worker is started")


def test_a_changed_input_is_named_by_the_judge(tmp_path: Path, checkout_imports_undone: None):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "adapters.py").write_text(ADAPTERS)
    module = load_module(str(tmp_path / "tests" / "adapters.py"))
    watcher = Watcher(tmp_path, tmp_path / "tests" / "adapters.py")
    softmax = {
        "call": "run_softmax",
        "args": [],
        "kwargs": {"in_features": torch.ones(2, 3), "dim": -1},
    }
    silu = {"call": "run_silu", "args": [torch.ones(4)], "kwargs": {}}
    changed = decode(answer(module, softmax, watcher)[HEADER:])
    assert changed["changed"] == ["in_features"]
    assert "changed" not in decode(answer(module, silu, watcher)[HEADER:])

    judge = RemoteAdapters(start_worker=_no_worker, limits=Limits(), log=tmp_path / "log")
    with pytest.raises(pytest.fail.Exception) as failed:
        judge._result("run_softmax", changed, softmax)
    assert str(failed.value).startswith(
        "run_softmax changed its input in place: in_features came back changed"
    )
    # What a submission that rewrote its worker could send instead: names it was not sent.
    forged = {"value": torch.ones(4), "changed": ["\x1b[2J", "mask"]}
    assert torch.equal(judge._result("run_silu", forged, silu), torch.ones(4))
