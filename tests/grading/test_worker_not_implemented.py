"""A NotImplementedError under the grader: the worker says where below the adapter it was
raised, and the judge keeps the verdict "not implemented" with that location cut and
cleaned, since whatever the worker sends is the submission's word."""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from cs336_harness.adapters.loader import load_module
from cs336_harness.grading.judge.record import MESSAGE_CHARS
from cs336_harness.grading.judge.recorder import classify
from cs336_harness.grading.judge.remote import RemoteAdapters
from cs336_harness.grading.results import Status
from cs336_harness.grading.sandbox.limits import Limits
from cs336_harness.grading.worker.process import answer
from cs336_harness.grading.worker.protocol import HEADER, decode
from cs336_harness.rules.runtime import Watcher

ADAPTERS = """\
def _silu(x):
    raise NotImplementedError


def run_silu(in_features):
    return _silu(in_features)


def run_softmax(in_features, dim):
    raise NotImplementedError
"""
NESTED = "`_silu` in tests/adapters.py:2 raised NotImplementedError"


def _no_worker(serial: int):
    raise AssertionError("the replies are given: no worker is started")


def test_the_location_reaches_the_verdict_cut_and_cleaned(
    tmp_path: Path, checkout_imports_undone: None
):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "adapters.py").write_text(ADAPTERS)
    module = load_module(str(tmp_path / "tests" / "adapters.py"))
    watcher = Watcher(tmp_path, tmp_path / "tests" / "adapters.py")
    x = torch.zeros(3)
    nested = decode(answer(module, {"call": "run_silu", "args": [x]}, watcher)[HEADER:])
    own = decode(answer(module, {"call": "run_softmax", "args": [x, 0]}, watcher)[HEADER:])
    assert nested == {"not_implemented": "run_silu", "where": NESTED, "called": []}
    assert own == {"not_implemented": "run_softmax", "called": []}
    # What a submission that rewrote its worker could send instead.
    forged = {"not_implemented": "run_linear", "where": "\x1b[2J`f`\nin a.py:1 " + "w" * 5000}
    not_text = {"not_implemented": "run_silu", "where": {"not": "text"}}

    judge = RemoteAdapters(start_worker=_no_worker, limits=Limits(), log=tmp_path / "log")
    lines = []
    for reply in (nested, own, forged, not_text):
        call = pytest.CallInfo.from_call(
            functools.partial(judge._result, "run_silu", reply, {"call": "run_silu"}),
            when="call",
        )
        assert classify(call, SimpleNamespace(skipped=False)) == Status.NOT_IMPLEMENTED
        lines.append(call.excinfo.value.msg)
    assert lines[0] == f"not implemented: run_silu → {NESTED}"
    # The adapter named is the one the judge asked for, whatever the reply says.
    assert lines[1] == lines[3] == "not implemented: run_silu"
    assert lines[2].startswith("not implemented: run_silu → \\x1b[2J`f`\\nin a.py:1 www")
    assert lines[2].endswith("characters cut]") and lines[2].isprintable()
    assert len(lines[2]) <= MESSAGE_CHARS  # the record keeps all of it
