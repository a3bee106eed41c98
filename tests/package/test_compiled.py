"""The bundled model under `torch.compile`: the backend `cs336-train --compile` picks for a
device, the written-out backwards (softmax, attention's masked softmax, cross-entropy)
giving eager mode's gradients when compiled, and a compiled training run ending where the
eager one does.

Compiling costs seconds (`aot_eager`: tracing) to minutes (Inductor on the CPU builds C++),
so all but the backend's choice are marked `slow`: `make test-slow` runs them, not the
everyday suite (docs/maintaining.md, "Speed").
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cs336_basics import cross_entropy
from cs336_basics.softmax import masked_softmax, softmax
from cs336_basics.training import compiling, read_curve_csv
from tests.package.test_training_run import STEPS, run, write_config

CPU, CUDA, MPS = torch.device("cpu"), torch.device("cuda"), torch.device("mps")
SHAPE = (3, 6, 6)
TARGETS = (torch.arange(18) % 6).reshape(SHAPE[:-1])


def test_backend_follows_the_device_and_the_setting(monkeypatch):
    assert compiling.compile_backend(False, CPU) is None
    assert compiling.compile_backend("eager", CUDA) == "eager"  # named: as named
    assert compiling.compile_backend(True, CUDA) == "inductor"
    assert compiling.compile_backend(True, MPS) == "aot_eager"  # as upstream's handout says
    monkeypatch.setattr(compiling, "cxx_found", lambda: True)
    assert compiling.compile_backend(True, CPU) == "inductor"
    monkeypatch.setattr(compiling, "cxx_found", lambda: False)
    assert compiling.compile_backend(True, CPU) == "aot_eager"  # Inductor would fail to build


def test_a_compiler_is_looked_for_where_inductor_looks(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    assert not compiling.cxx_found()
    monkeypatch.setenv("CXX", "sh")  # on every PATH: found is all that is asked
    assert compiling.cxx_found()


def _masked(x: torch.Tensor) -> torch.Tensor:
    # A row with no key allowed, too: zeros, whose gradient is zero.
    mask = torch.ones(x.shape[-2], x.shape[-1], dtype=torch.bool).tril()
    mask[0] = False
    return masked_softmax(x, mask)


@pytest.mark.slow
@pytest.mark.parametrize(
    "function",
    [
        lambda x: softmax(x, dim=-1),
        _masked,
        lambda x: cross_entropy(x, TARGETS),
    ],
    ids=["softmax", "masked_softmax", "cross_entropy"],
)
def test_written_out_backwards_are_eager_modes_when_compiled(function):
    # A forward writing in place once made compiled gradients wrong by 0.5 (torch 2.11); the
    # same ops in the same order otherwise, so only float32 rounding may differ.
    torch.manual_seed(0)
    x = torch.randn(SHAPE)
    eager_x, compiled_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    out = function(eager_x)
    grad_out = torch.randn_like(out)
    out.backward(grad_out)
    torch.compile(function, backend="aot_eager")(compiled_x).backward(grad_out)
    torch.testing.assert_close(compiled_x.grad, eager_x.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_compiled_run_trains_as_the_eager_run(tmp_path: Path, backend: str):
    if backend == "inductor" and not compiling.cxx_found():
        pytest.skip("Inductor builds its CPU kernels with a C++ compiler, and none is here")
    eager, compiled = write_config(tmp_path), tmp_path / "run"
    run(eager, "--out", str(tmp_path / "eager"))
    run(eager, "--compile", backend)
    expected = read_curve_csv(tmp_path / "eager" / "loss_curve.csv")
    got = read_curve_csv(compiled / "loss_curve.csv")
    assert [row["step"] for row in got] == list(range(STEPS + 1))
    # Float32 rounding of reordered sums, over 6 AdamW steps, stays under 1e-5 relative
    # here; a wrong gradient (the in-place forward above) moved the second loss by 7e-3.
    for column in ("train_loss", "val_loss"):
        assert [row[column] for row in got] == pytest.approx(
            [row[column] for row in expected], rel=1e-4, nan_ok=True
        ), column
    # The checkpoint holds the model's own names, not the compiled wrapper's (_orig_mod.).
    checkpoint = torch.load(next((compiled / "checkpoints").glob("*.pt")), weights_only=True)
    reference = torch.load(next((tmp_path / "eager" / "checkpoints").glob("*.pt")))
    assert checkpoint["model"].keys() == reference["model"].keys()
