"""Where a NotImplementedError below an adapter was raised
(`cs336_harness.adapters.not_implemented`): the function, the file relative to the
submission, and the line; nothing where the adapter's own body raised it or the harness did
(a missing adapter); one cut, clean line whatever the location's text holds."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from cs336_harness.adapters.not_implemented import WHERE_CHARS, message, where_raised
from cs336_harness.adapters.probes import registry

# A submission's checkout: its adapters, and a module of its own they build on.
LAYERS = """\
class RMSNorm:
    def forward(self, x):
        raise NotImplementedError
"""
ADAPTERS = """\
import torch

import submission_layers


def run_rmsnorm(x):
    return submission_layers.RMSNorm().forward(x)


def run_silu(x):
    return torch.nn.Module()(x)


def run_linear(x):
    raise NotImplementedError


def run_softmax(x):
    return _softmax(x)


def _softmax(x):
    raise NotImplementedError
"""


def _load(path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def adapters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    for relative, text in (("lib/layers.py", LAYERS), ("tests/adapters.py", ADAPTERS)):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    _load(tmp_path / "lib" / "layers.py", "submission_layers", monkeypatch)
    return _load(tmp_path / "tests" / "adapters.py", "submission_adapters", monkeypatch)


# adapter → the location its NotImplementedError gets
LOCATIONS = {
    "run_rmsnorm": "`RMSNorm.forward` in lib/layers.py:3 raised NotImplementedError",
    "run_softmax": "`_softmax` in tests/adapters.py:23 raised NotImplementedError",
    "run_silu": "`_forward_unimplemented` in torch raised NotImplementedError, called from "
    "`run_silu` in tests/adapters.py:11",
    "run_linear": None,  # the adapter's own stub: the plain line says it all
}


@pytest.mark.parametrize("adapter", list(LOCATIONS))
def test_the_location_names_function_file_and_line(adapters, adapter):
    with pytest.raises(NotImplementedError) as raised:
        getattr(adapters, adapter)(torch.zeros(2))
    assert where_raised(raised.value, adapters, [adapter]) == LOCATIONS[adapter]


def test_a_missing_adapter_has_no_location(adapters):
    with pytest.raises(registry.MissingAdapter) as raised:
        registry.adapter(adapters, "run_rope")
    assert where_raised(raised.value, adapters, ["run_rope"]) is None


def test_the_message_is_the_plain_line_without_a_location():
    assert message("run_rope") == "not implemented: run_rope"
    assert message("run_rope", "") == "not implemented: run_rope"
    # Under the grader the worker sends the location: anything but text is no location.
    assert message("run_rope", ["`f` in a.py:1"]) == "not implemented: run_rope"


def test_the_location_is_cut_and_cleaned_to_one_line():
    where = "\x1b]0;title\x07`f` in a.py:1\nraised " + "x" * 5000
    line = message("run_rope", where)
    assert line.startswith("not implemented: run_rope → \\x1b]0;title\\x07`f` in a.py:1\\nraised")
    assert line.endswith("characters cut]")
    assert len(line) == len("not implemented: run_rope → ") + WHERE_CHARS
    assert line.isprintable()
