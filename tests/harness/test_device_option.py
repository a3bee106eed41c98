"""`pytest --device`: the torch device the adapters get the cases' inputs and weights on
(`Case.to`, through the `case` fixture) and the one tests hand to adapters that take a
device (the `device` fixture); a device torch does not know, or one this machine lacks,
stops the session with one line. Most tests run a small pytest session inside this one
(pytester), as tests/meta/test_harness.py does.

The one device that every machine has besides the CPU is `meta`: it holds no values, so the
families' comparisons cannot pass there, but an adapter can still say where its inputs
came."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from cs336_harness.judging.cases import case_table, load_case

TESTS = Path(__file__).resolve().parent.parent
FAMILIES = TESTS / "families"
SILU = str(FAMILIES / "test_silu.py")

# Adapters that write down where each call's tensors are, one JSON object a line in RECORD.
RECORDING_ADAPTERS = """\
import json

import torch

RECORD = {record!r}


def _record(**where):
    with open(RECORD, "a") as f:
        f.write(json.dumps(where) + "\\n")


def run_linear(d_in, d_out, weights, in_features):
    _record(adapter="run_linear", weights=str(weights.device), in_features=str(in_features.device))
    return in_features @ weights.T


def run_get_batch(dataset, batch_size, context_length, device):
    _record(adapter="run_get_batch", dataset=type(dataset).__name__, device=device)
    x = torch.zeros(batch_size, context_length, dtype=torch.long, device=device)
    return x, x + 1
"""


def _usage_error(pytester: pytest.Pytester, *args: str) -> str:
    """The one line a session stopped by a usage error printed, before running anything."""
    result = pytester.runpytest_inprocess(SILU, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    errors = [line for line in result.errlines if line]
    assert len(errors) == 1, errors
    assert not "".join(result.outlines).strip()  # stopped before collecting: no test ran
    return errors[0]


def test_device_cpu_runs_a_family_and_it_passes(pytester):
    passed, skipped, failed = pytester.inline_run(SILU, "--device", "cpu").listoutcomes()
    assert passed and not skipped and not failed, failed


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_device_cuda_without_cuda_is_a_one_line_usage_error(pytester):
    assert _usage_error(pytester, "--device", "cuda") == (
        "ERROR: cs336: --device cuda: torch sees no CUDA device on this machine"
    )


def test_a_device_torch_does_not_know_is_a_one_line_usage_error(pytester):
    line = _usage_error(pytester, "--device", "nonsense")
    assert line.startswith("ERROR: cs336: --device nonsense: not a torch device ("), line


def test_inputs_weights_and_get_batch_devices_are_the_chosen_device(pytester):
    record = pytester.path / "record.jsonl"
    adapters = pytester.path / "recording_adapters.py"
    adapters.write_text(RECORDING_ADAPTERS.format(record=str(record)))
    families = [str(FAMILIES / "test_linear.py"), str(FAMILIES / "test_data_loading.py")]
    pytester.inline_run(*families, "--device", "meta", f"--adapters={adapters}")
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    linear = [c for c in calls if c["adapter"] == "run_linear"]
    batches = [c for c in calls if c["adapter"] == "run_get_batch"]
    # Every forward and backward case of linear (the backward probe's leaf copies included).
    assert len(linear) == len(case_table(TESTS / "fixtures")["linear"])
    assert all(c["weights"] == c["in_features"] == "meta" for c in linear), linear
    # test_get_batch asks for the chosen device; the dataset stays a NumPy array.
    assert batches and {c["device"] for c in batches} == {"meta"}, batches
    assert {c["dataset"] for c in batches} <= {"ndarray", "memmap"}, batches


def test_a_case_on_a_device_keeps_the_oracle_values_on_the_cpu():
    fixtures = TESTS / "fixtures"
    meta = torch.device("meta")
    backward = next(e for e in case_table(fixtures)["linear"] if e["params"].get("backward"))
    case = load_case(fixtures, "linear", backward).to(meta)
    assert {name: str(t.device) for name, t in case.tensors.items()} == {
        "in_features": "meta",
        "grad_projection": "meta",
        "expected_grad.in_features": "cpu",
        "expected_grad.weight": "cpu",
    }
    assert {str(t.device) for t in case.weights.values()} == {"meta"}
    block = load_case(fixtures, "transformer_block", case_table(fixtures)["transformer_block"][0])
    on_meta = {name for name, t in block.to(meta).tensors.items() if t.is_meta}
    assert on_meta == {"in_features"}  # not `expected`, nor the sublayers' `trace.*`
