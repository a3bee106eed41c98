"""Which directories are submissions: a command-line argument is one, or holds many."""

from __future__ import annotations

from pathlib import Path

from cs336_harness.adapter_loader import REPO_ROOT
from cs336_harness.grading.errors import GraderError

BUNDLED = "bundled"


def is_submission(directory: Path) -> bool:
    """A submission holds its own package or its own adapters file (or both)."""
    return (directory / "cs336_basics").is_dir() or (directory / "tests" / "adapters.py").is_file()


def _expand(argument: Path) -> list[Path]:
    if not argument.is_dir():
        raise GraderError(f"not a directory: {argument}")
    if is_submission(argument):
        return [argument]
    # A directory of submissions: each subdirectory is one, complete or not (an incomplete
    # one is graded, and fails, rather than silently skipped).
    found = sorted(p for p in argument.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not found:
        raise GraderError(
            f"{argument} is neither a submission (cs336_basics/, tests/adapters.py) "
            "nor a directory of submissions"
        )
    return found


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    taken.add(candidate)
    return candidate


def discover(arguments: list[Path]) -> list[tuple[str, Path]]:
    """(name, directory) of every submission; none given means the bundled implementation."""
    if not arguments:
        return [(BUNDLED, REPO_ROOT)]
    taken: set[str] = set()
    return [
        (_unique(p.name, taken), p.resolve()) for arg in arguments for p in _expand(arg.resolve())
    ]
