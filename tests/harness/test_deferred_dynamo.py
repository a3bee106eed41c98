"""torch.optim's guard against the compiler, deferred until torch._dynamo is imported
(`cs336_harness/adapters/deferred_dynamo.py`): checked on a class of its own, with
torch._dynamo made absent or stood in for, so that no test here imports it (a second or
more, and triton refuses a second import in one process)."""

from __future__ import annotations

import sys
import types
from typing import ClassVar

import pytest
import torch

from cs336_harness.adapters import deferred_dynamo


@pytest.fixture
def no_dynamo(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """A process where torch._dynamo is not imported yet; the import finders it had (the
    session's own deferral among them), which are put back afterwards."""
    monkeypatch.delitem(sys.modules, "torch._dynamo", raising=False)
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path])
    return [*sys.meta_path]


def _guarded_class() -> type:
    class Guarded:
        calls: ClassVar[list[str]] = []

        @torch._disable_dynamo
        def method(self, x: int) -> int:
            Guarded.calls.append("method")
            return x + 1

    return Guarded


def _import_of_dynamo_begins(before: list[object]) -> None:
    """What the import system does first on `import torch._dynamo`: ask each finder (those
    added since `before`: the session's own deferral stays as it is)."""
    for finder in [*sys.meta_path]:
        if finder not in before:
            finder.find_spec("torch._dynamo")


def test_the_guarded_method_runs_directly_while_dynamo_is_absent(no_dynamo):
    cls = _guarded_class()
    assert deferred_dynamo.install(cls) == 1
    assert cls().method(1) == 2
    assert cls.calls == ["method"]
    assert "torch._dynamo" not in sys.modules
    assert deferred_dynamo.install(cls) == 0  # once deferred, left alone


def test_once_dynamo_is_imported_torch_builds_its_own_guard(no_dynamo, monkeypatch):
    built = []

    def disable(fn, recursive=True, **kwargs):
        def guard(*args, **kw):
            built.append("guard")
            return fn(*args, **kw)

        return guard

    cls = _guarded_class()
    deferred_dynamo.install(cls)
    assert cls().method(1) == 2 and built == []
    _import_of_dynamo_begins(no_dynamo)
    assert sys.meta_path == no_dynamo  # the finder left
    dynamo = types.SimpleNamespace(disable=disable)
    monkeypatch.setitem(sys.modules, "torch._dynamo", dynamo)
    monkeypatch.setattr(torch, "_dynamo", dynamo, raising=False)
    assert cls().method(2) == 3
    assert cls().method(3) == 4
    assert built == ["guard", "guard"]  # torch's wrapper built the guard, and keeps it
    assert cls.calls == ["method"] * 3


def test_nothing_is_deferred_once_dynamo_is_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch._dynamo", types.SimpleNamespace())
    assert deferred_dynamo.install(_guarded_class()) == 0


def test_a_method_without_torchs_wrapper_is_left_alone(no_dynamo):
    class Plain:
        def method(self) -> None:
            pass

    assert deferred_dynamo.install(Plain) == 0


def test_the_optimizers_methods_are_deferred_in_every_session():
    """The plugin installs it at configure time: an optimizer made in any test then imports
    nothing (unless torch._dynamo was imported already, when there is nothing to save)."""
    if "torch._dynamo" in sys.modules:
        pytest.skip("torch._dynamo was imported before this test: nothing was deferred")
    for name in ("add_param_group", "zero_grad", "state_dict", "load_state_dict"):
        fn = getattr(torch.optim.Optimizer, name).__wrapped__
        assert getattr(fn, "__dynamo_disable", None) is fn, f"Optimizer.{name} is not deferred"
