"""Which directories and archives are submissions (what of each the worker gets to see:
`copy`; how an archive is unpacked: `archives`)."""

from __future__ import annotations

import os
from pathlib import Path

from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.intake.archives import SUFFIXES, archive_stem, unpack
from cs336_harness.grading.intake.copy import DEFAULT_LIMITS, IntakeLimits, IntakeRefused, LeftOut
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
# How many of an archive's top-level names a refusal shows.
SHOWN = 5


def is_archive(path: Path) -> bool:
    """Whether `path` is handed in as an archive: named like one, and not a folder (a link
    so named is one, which unpacking refuses)."""
    return archive_stem(path.name) is not None and not path.is_dir()


def member_name(path: Path) -> str:
    """A submission's name: its folder's, or its archive's without the suffix."""
    return archive_stem(path.name) if is_archive(path) else path.name


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


def unpack_submission(
    archive: Path, dest: Path, limits: IntakeLimits = DEFAULT_LIMITS
) -> tuple[Path, list[LeftOut]]:
    """Unpack `archive` into `dest` and find the one submission in it, as in an upload (at
    its top, or a few folders down: `find_in_upload`); what unpacking left out. Raises
    IntakeRefused, in one line, when it holds none or several."""
    left_out = unpack(archive, dest, limits)
    found = find_in_upload(dest)
    if len(found) == 1:
        return found[0], left_out
    name = archive.name
    if found:
        places = ", ".join(f"{p.relative_to(dest).as_posix()}/" for p in found[:SHOWN])
        more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
        raise IntakeRefused(f"{name}: holds {len(found)} submissions ({places}{more}): hand in one")
    top = sorted(os.listdir(dest))
    holds = ", ".join(top[:SHOWN]) + (f" and {len(top) - SHOWN} more" if len(top) > SHOWN else "")
    raise IntakeRefused(
        f"{name}: holds no submission (cs336_basics/ or tests/adapters.py, at its top or up "
        f"to {UPLOAD_DEPTH} folders down){f'; it holds {holds}' if top else '; it is empty'}"
    )


def _is_member(entry: os.DirEntry[str]) -> bool:
    """A member of a class directory: a folder, an archive, or a link (kept as a link: the
    intake refuses it, so that it shows in the reports as an error under its own name
    instead of being graded as the classmate it points to)."""
    if entry.name.startswith("."):
        return False
    archive = archive_stem(entry.name) is not None and entry.is_file(follow_symlinks=False)
    return entry.is_dir(follow_symlinks=False) or entry.is_symlink() or archive


def _expand(argument: Path) -> list[Path]:
    if is_archive(argument) and argument.is_file():
        return [argument]
    if not argument.is_dir():
        raise GraderError(f"not a directory or an archive ({', '.join(SUFFIXES)}): {argument}")
    if is_submission(argument):
        return [argument]
    # A directory of submissions: each folder or archive is one, complete or not (an
    # incomplete one is graded, and fails, rather than silently skipped), in their names'
    # order (a shard is every n-th of them).
    with os.scandir(argument) as entries:
        found = [argument / entry.name for entry in entries if _is_member(entry)]
    if not found:
        raise GraderError(
            f"{argument} is neither a submission (cs336_basics/, tests/adapters.py) "
            f"nor a directory of submissions (folders, or archives: {', '.join(SUFFIXES)})"
        )
    return sorted(found, key=lambda path: (member_name(path), path.name))


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    taken.add(candidate)
    return candidate


def discover(arguments: list[Path]) -> list[tuple[str, Path]]:
    """(name, directory or archive) of every submission; none given means the bundled
    implementation. An archive's name is its file's without the suffix.

    A path given is resolved (the operator chose it); what a directory of submissions
    holds is not, so a member that is a link stays one."""
    if not arguments:
        return [(BUNDLED, REPO_ROOT)]
    taken: set[str] = set()
    return [
        (_unique(member_name(p), taken), p) for arg in arguments for p in _expand(arg.resolve())
    ]
