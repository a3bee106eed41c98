"""How much of each tolerance an adapters module uses: the evidence behind the tolerances in
cs336_harness/tolerances.py.

`uv run python -m cs336_staff.error_margins [ADAPTERS ...]` runs every family's test on
every stored case and prints, per case, the largest absolute error and the fraction of the
tolerance it uses, max |a − e| / (atol + rtol·|e|): below 1 passes, and a correct module
should stay near 0.1 or lower. Defaults to the two correct modules, from-scratch and fused.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
from pathlib import Path
from unittest import mock

import torch
from rich.console import Console
from rich.table import Table

from cs336_harness.adapters.loader import Adapters
from cs336_harness.families import family as registered
from cs336_harness.judging.cases import case_table, load_case
from cs336_harness.judging.pytest_plugin import DEFAULT_FIXTURES

DEFAULT_MODULES = ["tests/adapters.py", "tests/evidence/fused.py"]


# Families whose tolerance test is not called `test_<family>`.
TEST_NAMES = {"transformer_lm_module": "test_lm_parameter_gradients"}


def usage(case, test, adapters: Adapters) -> tuple[float, float]:
    """Run `test` on `case` and return (max abs error, fraction of the tolerance used)."""
    seen: list[tuple[float, float]] = []

    def measure(actual, expected, rtol, atol) -> None:
        # On the CPU, in float64, wherever `--device` put the test's tensors.
        actual, expected = actual.detach().cpu().double(), expected.detach().cpu().double()
        error = (actual - expected).abs()
        allowed = atol + rtol * expected.abs()
        fraction = torch.where(error == 0, 0.0, error / allowed).max().item()
        seen.append((error.max().item(), fraction))

    def record(actual, expected, *, dtype, rtol, atol, what="output"):
        measure(actual, expected, rtol, atol)

    def record_difference(actual, expected, rtol, atol):
        measure(actual, expected, rtol, atol)

    # A test compares with `assert_matches_oracle`, one tensor at a time (a backward test in
    # tests/families/gradients.py, one per input) or, for the LM's parameters,
    # `describe_difference`:
    # the worst comparison counts.
    module = importlib.import_module(test.__module__)
    fakes = [(importlib.import_module("tests.families.gradients"), "assert_matches_oracle", record)]
    fakes += [
        (module, name, fake)
        for name, fake in (
            ("assert_matches_oracle", record),
            ("describe_difference", record_difference),
        )
        if hasattr(module, name)
    ]
    with contextlib.ExitStack() as stack:
        for target, name, fake in fakes:
            stack.enter_context(mock.patch.object(target, name, fake))
        test(case, adapters)
    return max(seen, key=lambda s: s[1])


def tolerance_test(family: str, backward: bool = False):
    """The family's `test_<family>` (`test_<family>_backward` for a backward case) when the
    registry gives it a tolerance; None for families judged exactly or statistically
    (batches, checkpoints, decoding, a module's parameter names)."""
    entry = registered(family)
    if (entry.backward if backward else entry.tolerance) is None:
        return None
    name = f"test_{family}_backward" if backward else TEST_NAMES.get(family, f"test_{family}")
    return getattr(importlib.import_module(entry.module), name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=DEFAULT_MODULES, help="adapters modules")
    parser.add_argument("--fixtures-dir", type=Path, default=DEFAULT_FIXTURES)
    parser.add_argument(
        "--device",
        default="cpu",
        help="torch device the cases' inputs and weights go to, as `pytest --device` puts "
        "them (cuda: how much of each tolerance a GPU's kernels use)",
    )
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    modules = {spec: Adapters(spec) for spec in args.modules}
    table = Table(title=f"max |error| and fraction of the tolerance used, per case, on {device}")
    table.add_column("family / case")
    for spec in modules:
        table.add_column(Path(spec).stem, justify="right")
    for family, entries in case_table(args.fixtures_dir.resolve()).items():
        for entry in entries:
            test = tolerance_test(family, entry["params"].get("backward", False))
            if test is None:
                continue
            cells = []
            for adapters in modules.values():
                case = load_case(args.fixtures_dir.resolve(), family, entry)
                if registered(family).case_on_device:
                    case = case.to(device)
                error, fraction = usage(case, test, adapters)
                cells.append(f"{error:.1e}  {fraction:.3f}")
            table.add_row(f"{family} / {entry['id']}", *cells)
    Console().print(table)


if __name__ == "__main__":
    main()
