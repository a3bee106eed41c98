"""`make bench`'s rows for the efficiency tests: what they add to a correct submission's
grading, and whether the budgets still hold where they were measured (`cs336_harness/cost/
budgets.py`): the toy trainer at twice the speed limit, the bundled implementation's costs
at the references the tests set a submission's beside."""

from __future__ import annotations

import gc
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from cs336_harness.adapters.loader import Adapters
from cs336_harness.adapters.probes import tokenizer
from cs336_harness.cost import budgets, yardstick
from cs336_harness.judging.case_layout import case_table
from cs336_harness.judging.cases import load_case
from cs336_harness.paths import DEFAULT_ADAPTERS, REPO_ROOT
from tests.families import costs

# One intra-op thread, as the suite (tests/conftest.py) and the grader's worker run: an idle
# OpenMP thread spins, and its CPU time would be counted as the call's.
torch.set_num_threads(1)
# What is imported by now frozen, as the suite and the worker freeze it: the adapters' timed
# calls pause collection, but the yardstick timed here does not, and beside torch unfrozen
# its work costs about 1.5 times as much.
gc.freeze()
FIXTURES = REPO_ROOT / "tests" / "fixtures"
TOY = REPO_ROOT / "tests" / "evidence" / "cost" / "bpe_recounts_pairs.py"
# What the efficiency tests may add to a correct submission's grading (the bound).
GRADING_GROWTH_TARGET = 0.10
# How far the toy trainer may have drifted from twice the speed limit, and the bundled
# implementation from a reference, before the constants are measured again (a factor).
TOY_DRIFT_TARGET = 1.33
REFERENCE_DRIFT_TARGET = 2.0
COPIES = 2


def _cost_case(family: str):
    [entry] = [e for e in case_table(FIXTURES)[family] if e["params"].get("cost")]
    return load_case(FIXTURES, family, entry)


def _drift(value: float) -> float:
    return max(value, 1 / value)


def toy_in_yardsticks() -> float:
    """The toy trainer's charged cost on the stored cost case, in yardsticks: the median of
    three readings, its typical cost (the test keeps a slow verdict's best reading, which on
    a host whose pace swings is the most lenient, not the typical)."""
    adapters, case = Adapters(str(TOY)), _cost_case("train_bpe")
    readings = []
    for _ in range(3):
        before = yardstick.seconds()
        charged, _ = costs.bpe_charged(adapters, case)
        readings.append(charged / max(before, yardstick.seconds()))
    return statistics.median(readings)


def bundled_in_yardsticks() -> dict[str, float]:
    """The bundled implementation's cost of each cost test beyond upstream, in yardsticks a
    call (the median of three)."""
    adapters, case = Adapters(str(DEFAULT_ADAPTERS)), _cost_case("tokenizer")
    measured: dict[str, list[float]] = {}
    for _ in range(3):
        y = yardstick.seconds()
        for family, work in costs.WORKLOADS.items():
            inputs = work.inputs(torch.Generator().manual_seed(0), costs.WORKING)
            _, spent = adapters.measured_call(work.adapter, (), inputs, work.times)
            measured.setdefault(family, []).append(spent / work.times / y)
        _, spent = tokenizer.encode_cost.measured(
            adapters,
            **costs.stored_pages(case),
            merges_kept=len(case["merges_lengths"]),
            chars=budgets.ENCODE_CHARS,
        )
        measured.setdefault("encode", []).append(spent / y)
    return {name: sorted(values)[1] for name, values in measured.items()}


def grading_growth() -> tuple[float, str]:
    """What the efficiency tests add to a correct submission's grading: their durations over
    the rest of its wall time (the grading without them), copies of the bundled
    implementation graded one at a time; the mean over the copies."""
    from benchmarks.bench import write_bundled_class

    with tempfile.TemporaryDirectory() as tmp:
        write_bundled_class(Path(tmp) / "class", COPIES)
        command = [sys.executable, "-m", "cs336_harness.grading", str(Path(tmp) / "class")]
        command += ["--out", str(Path(tmp) / "out")]
        if not shutil.which("bwrap"):
            command.append("--no-sandbox")
        subprocess.run(command, cwd=REPO_ROOT, capture_output=True, check=True)
        graded = json.loads((Path(tmp) / "out" / "grading.json").read_text())["submissions"]
    spent = [sum(t["duration"] for t in s["tests"] if t.get("efficiency")) for s in graded]
    walls = [s["wall_time"] for s in graded]
    growths = [e / (w - e) for e, w in zip(spent, walls, strict=True)]
    spent_mean = statistics.mean(spent)
    values = f"{spent_mean:.2f} s over {statistics.mean(walls) - spent_mean:.1f} s"
    return statistics.mean(growths), values


def rows() -> list[tuple[str, str, float, float]]:
    growth, values = grading_growth()
    toy = toy_in_yardsticks()
    bundled = bundled_in_yardsticks()
    worst = max(bundled, key=lambda name: _drift(bundled[name] / budgets.REFERENCE[name]))
    return [
        ("what the efficiency tests add to a correct submission's grading", values, growth,
         GRADING_GROWTH_TARGET),
        ("toy trainer / twice the speed limit (yardsticks; drift either way)",
         f"{toy:.0f} / {2 * budgets.TRAIN_BPE_LIMIT:.0f}",
         _drift(toy / (2 * budgets.TRAIN_BPE_LIMIT)), TOY_DRIFT_TARGET),
        (f"bundled cost / its reference, worst of {len(bundled)} ({worst}; drift either way)",
         f"{bundled[worst]:.3f} / {budgets.REFERENCE[worst]}",
         _drift(bundled[worst] / budgets.REFERENCE[worst]), REFERENCE_DRIFT_TARGET),
    ]  # fmt: skip
