"""Which directories are submissions (what of each the worker gets to see: `intake.py`)."""

from __future__ import annotations

import os
from pathlib import Path

from cs336_harness.grading.errors import GraderError
from cs336_harness.paths import REPO_ROOT

BUNDLED = "bundled"


def is_submission(directory: Path) -> bool:
    """A submission holds its own package or its own adapters file (or both), whatever
    they are: one that is a link is still what makes it a submission (the intake then
    leaves the link out, with a note)."""
    return os.path.lexists(directory / "cs336_basics") or os.path.lexists(
        directory / "tests" / "adapters.py"
    )


# An upload's debris, never a submission: macOS's resource forks in a zip it made.
DEBRIS = ("__MACOSX",)
# How deep in an upload a submission is looked for: a zip of the folder holding it, or of
# the folder holding that.
UPLOAD_DEPTH = 3


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError:
        return []


def find_in_upload(upload: Path) -> list[Path]:
    """Where in an upload the submissions are: `upload` itself when it is one, else every
    folder (not a link, not `__MACOSX` or hidden) within `UPLOAD_DEPTH` levels of it that
    is one and is not inside another. A student may upload a zip of the folder holding the
    files, or submit a whole repository; one result is a submission to grade."""
    if is_submission(upload):
        return [upload]
    found, level = [], [upload]
    for _ in range(UPLOAD_DEPTH):
        below = []
        for directory in level:
            for entry in _entries(directory):
                if entry.name.startswith(".") or entry.name in DEBRIS:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    path = Path(entry.path)
                    (found if is_submission(path) else below).append(path)
        level = below
    return found


def _expand(argument: Path) -> list[Path]:
    if not argument.is_dir():
        raise GraderError(f"not a directory: {argument}")
    if is_submission(argument):
        return [argument]
    # A directory of submissions: each subdirectory is one, complete or not (an incomplete
    # one is graded, and fails, rather than silently skipped). A link is one too, and is
    # kept as a link: the intake refuses it, so that it shows in the reports as an error
    # under its own name instead of being graded as the classmate it points to.
    with os.scandir(argument) as entries:
        found = sorted(
            argument / entry.name
            for entry in entries
            if (entry.is_dir(follow_symlinks=False) or entry.is_symlink())
            and not entry.name.startswith(".")
        )
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
    """(name, directory) of every submission; none given means the bundled implementation.

    A path given is resolved (the operator chose it); what a directory of submissions
    holds is not, so a member that is a link stays one."""
    if not arguments:
        return [(BUNDLED, REPO_ROOT)]
    taken: set[str] = set()
    return [(_unique(p.name, taken), p) for arg in arguments for p in _expand(arg.resolve())]
