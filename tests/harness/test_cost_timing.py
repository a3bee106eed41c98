"""A call timed in this process (`Adapters.measured`, `measured_call`: a student's pytest, the
meta-test's runs) is timed without garbage collection, as `timeit` times, and collection is
back on afterwards."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import torch

from cs336_harness.adapters.loader import Adapters

MODULE = """
import gc

SEEN = []


def run_softmax(in_features, dim):
    SEEN.append(gc.isenabled())
    return in_features
"""


@pytest.fixture
def adapters(tmp_path: Path, checkout_imports_undone: None) -> Adapters:
    (tmp_path / "adapters.py").write_text(MODULE)
    return Adapters(str(tmp_path / "adapters.py"))


def test_the_timed_calls_run_without_collection(adapters: Adapters):
    adapters.measured_call("run_softmax", (torch.ones(2), 0), {}, times=2)
    # The first call is the checked one, untimed; the two timed after it.
    assert adapters.module.SEEN == [True, False, False]
    assert gc.isenabled()


def test_a_timed_probe_runs_without_collection(adapters: Adapters, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(adapters, "probe", lambda name, kwargs: gc.isenabled())
    assert adapters.measured("encode_cost", {})[0] is False
    assert gc.isenabled()


def test_collection_stays_off_where_it_was_off(adapters: Adapters):
    gc.disable()
    try:
        adapters.measured_call("run_softmax", (torch.ones(2), 0), {})
        assert not gc.isenabled()
    finally:
        gc.enable()
