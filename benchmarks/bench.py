"""Speed and memory targets, checked by `make bench` (not by timed tests, which flake).

1. Forward pass of the bundled `TransformerLM` against the fused-op implementation in
   `tests/fused_adapters.py` on the same weights: time (torch.utils.benchmark) and peak
   resident memory (each measured in a fresh process, so one does not inherit the other's
   peak).
2. Wall time of the everyday suite (`pytest`) against `python -c "import torch"`: the suite
   should cost little more than importing torch.
3. The grader's cost per submission: `cs336-grade -j 2` on copies of the bundled
   implementation, each graded in the sandbox (no sandbox: `--no-sandbox` is measured),
   wall time divided by the number of copies.

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {
    "vocab_size": 10000,
    "context_length": 256,
    "d_model": 384,
    "num_layers": 6,
    "num_heads": 6,
    "d_ff": 1024,
    "rope_theta": 10000.0,
}
BATCH = 4

# The bundled model is written from scratch for readability; it may be this much slower
# than fused kernels and use this much more memory before it counts as a regression.
TIME_RATIO_TARGET = 1.5
MEMORY_RATIO_TARGET = 1.5
# Seconds the test suite may add to a bare `import torch`.
SUITE_OVERHEAD_TARGET_S = 3.0
# Seconds of wall time per submission when a class is graded two at a time on two cores.
GRADING_COPIES = 20
GRADING_PER_SUBMISSION_TARGET_S = 5.0


def _setup(implementation: str):
    import torch

    from cs336_basics import TransformerLM
    from tests import fused_adapters

    torch.manual_seed(0)
    model = TransformerLM(**CONFIG).eval()
    weights = {k: v.detach() for k, v in model.state_dict().items()}
    ids = torch.randint(0, CONFIG["vocab_size"], (BATCH, CONFIG["context_length"]))
    if implementation == "bundled":
        return lambda: model(ids)
    return lambda: fused_adapters.run_transformer_lm(**CONFIG, weights=weights, in_indices=ids)


def measure_in_this_process(implementation: str) -> None:
    """Print `seconds peak_bytes` for one implementation (run in a child process)."""
    import torch
    from torch.utils.benchmark import Timer

    forward = _setup(implementation)
    with torch.no_grad():
        forward()  # warm-up, and every lazy allocation made once
        timing = Timer("forward()", globals={"forward": forward}).blocked_autorange(min_run_time=3)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in KiB on Linux: the whole process's peak (setup included), compared as is
    # between the two implementations, which share the same setup.
    print(timing.median, peak * 1024)


def measure(implementation: str) -> tuple[float, int]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", implementation],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(out[0]), int(out[1])


def best_wall_time(command: list[str], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return min(times)


def grading_seconds_per_submission(copies: int) -> tuple[float, str]:
    """Grade `copies` copies of the bundled implementation with -j 2; (s per copy, sandbox)."""
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(copies):
            for part in ("cs336_basics", "tests/adapters.py"):
                source, dest = ROOT / part, Path(tmp) / "class" / f"copy{i:02d}" / part
                dest.parent.mkdir(parents=True, exist_ok=True)
                if source.is_dir():
                    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copyfile(source, dest)
        command = [sys.executable, "-m", "cs336_harness.grading", str(Path(tmp) / "class")]
        command += ["-j", "2", "--out", str(Path(tmp) / "out")]
        sandbox = "bubblewrap" if shutil.which("bwrap") else "none"
        start = time.perf_counter()
        subprocess.run(command + ([] if shutil.which("bwrap") else ["--no-sandbox"]),
                       cwd=ROOT, capture_output=True, check=True)  # fmt: skip
        return (time.perf_counter() - start) / copies, sandbox


def main() -> int:
    from rich.console import Console
    from rich.table import Table

    bundled_s, bundled_mem = measure("bundled")
    fused_s, fused_mem = measure("fused")
    torch_s = best_wall_time([sys.executable, "-c", "import torch"])
    suite_s = best_wall_time([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"])
    grading_s, sandbox = grading_seconds_per_submission(GRADING_COPIES)

    rows = [
        (
            "forward time, bundled / fused",
            f"{bundled_s * 1e3:.0f} ms / {fused_s * 1e3:.0f} ms",
            bundled_s / fused_s,
            TIME_RATIO_TARGET,
        ),
        (
            "peak RSS, bundled / fused",
            f"{bundled_mem / 2**20:.0f} MiB / {fused_mem / 2**20:.0f} MiB",
            bundled_mem / fused_mem,
            MEMORY_RATIO_TARGET,
        ),
        (
            "suite − import torch",
            f"{suite_s:.2f} s − {torch_s:.2f} s",
            suite_s - torch_s,
            SUITE_OVERHEAD_TARGET_S,
        ),
        (
            f"grading, s per submission ({GRADING_COPIES} copies, -j 2, sandbox: {sandbox})",
            f"{grading_s * GRADING_COPIES:.0f} s / {GRADING_COPIES}",
            grading_s,
            GRADING_PER_SUBMISSION_TARGET_S,
        ),
    ]
    table = Table(title=f"make bench: TransformerLM {CONFIG}, batch {BATCH}, on the CPU")
    for column in ("measure", "values", "ratio / excess", "target", "status"):
        table.add_column(column)
    missed = 0
    for name, values, value, target in rows:
        ok = value <= target
        missed += not ok
        table.add_row(name, values, f"{value:.2f}", f"≤ {target}", "ok" if ok else "MISSED")
    Console().print(table)
    return 1 if missed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=["bundled", "fused"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure_in_this_process(args.child)
    else:
        sys.exit(main())
