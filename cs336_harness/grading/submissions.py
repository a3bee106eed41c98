"""Which directories are submissions, and what of each one the worker gets to see."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from cs336_harness.adapter_loader import REPO_ROOT
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.trusted import DEBRIS

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


def _copy_file(source: Path, dest: Path, skipped: list[str], root: Path) -> None:
    """Copy a regular file; anything else (a link, a FIFO, a device) is left out, since
    following it would read outside the submission or block the grader."""
    mode = os.lstat(source).st_mode
    if stat.S_ISREG(mode):
        shutil.copyfile(source, dest)
    elif stat.S_ISDIR(mode):
        dest.mkdir()
        for child in sorted(source.iterdir()):
            if not shutil.ignore_patterns(*DEBRIS)(str(source), [child.name]):
                _copy_file(child, dest / child.name, skipped, root)
    else:
        skipped.append(source.relative_to(root).as_posix())


def copy_submission(source: Path, dest: Path) -> list[str]:
    """Copy what a submission contributes, its package and its adapters file, into `dest`;
    return the paths left out (links and special files).

    Anything else it holds (its own tests, fixtures, conftest) is never used. A part it
    lacks stays absent, so importing it fails in the worker as it would for a student.
    """
    dest.mkdir(parents=True)
    skipped: list[str] = []
    if (source / "cs336_basics").is_dir():
        _copy_file(source / "cs336_basics", dest / "cs336_basics", skipped, source)
    adapters = source / "tests" / "adapters.py"
    if adapters.is_file() or adapters.is_symlink():
        (dest / "tests").mkdir()
        _copy_file(adapters, dest / "tests" / "adapters.py", skipped, source)
    return skipped
