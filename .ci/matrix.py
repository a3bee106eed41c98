"""`make matrix`: the everyday suite on every Python and torch that pyproject.toml claims.

Each cell builds a throwaway environment in a temporary directory from an interpreter
already on this machine (uv downloads none), runs `pytest` there (the default selection)
and the grader's self-check (`cs336-grade`, sandboxed, full marks required) against this
working tree, and deletes it; the locked `.venv` is never touched. A table of
the cells, their verdicts and times closes the run; the exit status is 1 when any failed.

    uv run python .ci/matrix.py                   # every cell
    uv run python .ci/matrix.py py3.11-lowest     # the named cells only
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Cell:
    name: str
    python: str  # "3.12": any installed 3.12.x
    torch: str | None = None  # a torch requirement, the rest at their newest; None: uv.lock
    lowest: bool = False  # every direct dependency (torch too) at its lower bound
    about: str = ""


# uv.lock holds the newest course's torch (2.11, the 2026 course: pyproject.toml's
# constraint), so the locked cells check it on every Python, and one cell the newest torch
# the bounds allow; the lower bounds are checked on 3.11 only, as numpy 1.26 has no wheels
# for 3.13.
CELLS = (
    Cell("py3.11", "3.11", about="uv.lock"),
    Cell("py3.12", "3.12", about="uv.lock (the 2026 course)"),
    Cell("py3.13", "3.13", about="uv.lock"),
    Cell("py3.13-torch2.15", "3.13", torch="torch==2.15.*", about="the newest torch allowed"),
    Cell(
        "py3.11-lowest",
        "3.11",
        # Named as well: with the course group, uv's lowest-direct resolution took 2.7.
        torch="torch==2.6.*",
        lowest=True,
        about="every lower bound in pyproject.toml (2025 course)",
    ),
    Cell("py3.13-torch2.6", "3.13", torch="torch==2.6.*", about="oldest torch, newest Python"),
)


@dataclass
class Outcome:
    cell: Cell
    verdict: str = "FAIL"
    versions: tuple[str, str, str] = ("?", "?", "?")  # Python, torch, numpy
    setup_s: float = 0.0
    suite_s: float = 0.0
    grade_s: float = 0.0


def uv_env() -> dict[str, str]:
    """The environment for uv and the cells: `uv run` points VIRTUAL_ENV at `.venv`, which
    uv would otherwise take as the environment to install into or to warn about."""
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def find_python(uv: str, version: str) -> str | None:
    """An installed Python `version`: uv's search (PATH, uv's own installs), then pyenv's,
    whose shims answer only for the active version, so uv cannot see the others."""
    found = subprocess.run(
        [uv, "python", "find", "--system", version], capture_output=True, text=True, env=uv_env()
    )
    if found.returncode == 0:
        return found.stdout.strip()
    if shutil.which("pyenv"):
        prefix = subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True)
        python = Path(prefix.stdout.strip()) / "bin" / f"python{version}"
        if prefix.returncode == 0 and python.exists():
            return str(python)
    return None


def setup_commands(uv: str, cell: Cell, python: str, venv: Path) -> list[list[str]]:
    """The uv commands that install the project, its dependencies and the dev group (the
    suite needs hypothesis) into `venv` as `cell` asks. No bytecode is compiled: the suite
    runs once per cell, and compiling all of torch costs more than that run saves."""
    if cell.torch is None and not cell.lowest:
        return [[uv, "sync", "--locked", "--python", python]]
    # Without pyproject.toml's [tool.uv] settings: its torch constraint is uv.lock's.
    install = [uv, "pip", "install", "--no-config", "--python", str(venv / "bin" / "python")]
    install += ["-e", "."]
    install += ["--group", "dev", "--group", "course"]
    if cell.lowest:
        install += ["--resolution", "lowest-direct"]
    if cell.torch:
        install.append(cell.torch)
    return [[uv, "venv", "--python", python, str(venv)], install]


def run_cell(uv: str, cell: Cell, venv: Path) -> tuple[Outcome, str]:
    """Build `cell`'s environment in `venv` and run the suite there: the outcome, and the
    output to show when it failed."""
    outcome = Outcome(cell)
    python = find_python(uv, cell.python)
    if python is None:
        outcome.verdict = f"FAIL: no Python {cell.python} here"
        hint = f"install it (`pyenv install {cell.python}` or `uv python install {cell.python}`)"
        return outcome, f"no Python {cell.python} found by uv or pyenv: {hint}"
    env = uv_env() | {"UV_PROJECT_ENVIRONMENT": str(venv)}
    started = time.monotonic()
    for command in setup_commands(uv, cell, python, venv):
        done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            outcome.verdict = "FAIL: setup"
            outcome.setup_s = time.monotonic() - started
            return outcome, f"$ {' '.join(command)}\n{done.stdout}{done.stderr}"
    outcome.setup_s = time.monotonic() - started
    report = "print(platform.python_version(), m.version('torch'), m.version('numpy'))"
    versions = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import importlib.metadata as m, platform; {report}"],
        capture_output=True,
        text=True,
        check=True,
    )
    outcome.versions = tuple(versions.stdout.split())
    # The cell's own bin first, as `uv run` would put it: tests that start a process by name
    # get the cell's, not `.venv`'s.
    env = uv_env() | {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    started = time.monotonic()
    pytest = [str(venv / "bin" / "pytest"), "tests", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(pytest, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    outcome.suite_s = time.monotonic() - started
    lines = done.stdout.strip().splitlines()
    summary = lines[-1].strip("= ") if lines else f"pytest exited {done.returncode}"
    outcome.verdict = ("pass: " if done.returncode == 0 else "FAIL: ") + summary.split(" in ")[0]
    if done.returncode != 0:
        return outcome, done.stdout + done.stderr
    return self_check(outcome, venv, env)


def self_check(outcome: Outcome, venv: Path, env: dict[str, str]) -> tuple[Outcome, str]:
    """The grader's self-check in the cell, sandbox and all, at full marks: the sandboxed
    worker imports this torch where the suite does not look (torch 2.11's torch._dynamo
    asked the worker, a user no passwd file lists, for its name: every submission scored 0
    while the suite passed)."""
    if shutil.which("bwrap") is None:
        outcome.verdict += "; no self-check (no bwrap on PATH)"
        return outcome, ""
    started = time.monotonic()
    grade = [str(venv / "bin" / "python"), "-m", "cs336_harness.grading", "--fail-under", "100",
             "--out", str(venv.parent / "self-check")]  # fmt: skip
    done = subprocess.run(grade, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    outcome.grade_s = time.monotonic() - started
    if done.returncode != 0:
        outcome.verdict = f"FAIL: cs336-grade self-check (exit {done.returncode})"
        return outcome, done.stdout + done.stderr
    outcome.verdict += "; self-check full marks"
    return outcome, ""


def table(outcomes: list[Outcome]) -> str:
    """One row per cell, columns aligned."""
    header = ("cell", "python", "torch", "numpy", "result", "setup", "suite", "grade", "what")
    rows = [header]
    for o in outcomes:
        times = (f"{o.setup_s:.1f} s", f"{o.suite_s:.1f} s", f"{o.grade_s:.1f} s")
        rows.append((o.cell.name, *o.versions, o.verdict, *times, o.cell.about))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ("  ".join(f"{v:<{w}}" for v, w in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(line.rstrip() for line in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [cell.name for cell in CELLS]
    parser.add_argument(
        "cells",
        nargs="*",
        metavar="CELL",
        help=f"the cells to run (default: all): {', '.join(names)}",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.cells) - set(names))
    if unknown:
        parser.error(f"no cell named {', '.join(unknown)}; the cells: {', '.join(names)}")
    # `uv run` names its own binary in UV; from a plain shell, the one on PATH.
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        sys.exit("the matrix needs uv: `pip install uv`")
    outcomes = []
    for cell in [cell for cell in CELLS if cell.name in (args.cells or names)]:
        print(f"== {cell.name}: Python {cell.python}, {cell.about}", flush=True)
        with tempfile.TemporaryDirectory(prefix=f"cs336-matrix-{cell.name}-") as tmp:
            outcome, output = run_cell(uv, cell, Path(tmp) / "venv")
        outcomes.append(outcome)
        print(f"   {outcome.verdict}", flush=True)
        if output:
            print("\n".join(output.rstrip().splitlines()[-60:]), flush=True)
    print()
    print(table(outcomes))
    failed = sum(not o.verdict.startswith("pass") for o in outcomes)
    print(f"{len(outcomes) - failed} of {len(outcomes)} cells pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
