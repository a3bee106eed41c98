"""What to grade of what a student uploaded to a grading platform (Gradescope's
/autograder/submission, PrairieLearn's /grade/student): its one submission or its one
archive, else why it is not graded, in one line the student can act on."""

from __future__ import annotations

import os
from pathlib import Path

from cs336_harness.grading.intake.archives import SUFFIXES, archive_stem
from cs336_harness.grading.intake.submissions import DEBRIS, UPLOAD_DEPTH, find_in_upload
from cs336_harness.untrusted import clean_names

# How many of an upload's names a message shows.
SHOWN = 10
# Archives a student may upload inside the upload: those the grader unpacks, and others.
ARCHIVES = (*SUFFIXES, ".7z", ".rar")
NEEDS = "your cs336_basics/ folder and tests/adapters.py"


def _names(paths: list[str]) -> str:
    """Names from the upload, cleaned (they are the student's), the first few."""
    shown = ", ".join(clean_names(paths[:SHOWN]))
    return shown + (f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else "")


def _archives(upload: Path) -> list[str]:
    """Archives in the upload (which the platform did not unpack), by their path in it."""
    found = []
    for directory, folders, files in os.walk(upload):
        depth = len(Path(directory).relative_to(upload).parts)
        folders[:] = [] if depth >= UPLOAD_DEPTH else [f for f in folders if f not in DEBRIS]
        found += [
            (Path(directory) / name).relative_to(upload).as_posix()
            for name in files
            if name.lower().endswith(ARCHIVES)
        ]
    return sorted(found)


def to_grade(upload: Path) -> Path | str:
    """What to grade of an upload: its one submission (`find_in_upload`), else its one
    archive (Gradescope unpacks a zip uploaded alone, not a zip inside a folder, nor a
    tarball; PrairieLearn unpacks nothing: the grader unpacks it, safely, and finds the
    submission in it); else why it is not graded, in one line a student can act on
    (`not_found`)."""
    found = find_in_upload(upload)
    if len(found) == 1:
        return found[0]
    archives = [] if found else _archives(upload)
    if len(archives) == 1 and archive_stem(Path(archives[0]).name) is not None:
        return upload / archives[0]
    return not_found(upload, found)


def not_found(upload: Path, found: list[Path]) -> str:
    """Why an upload was not graded, in one line a student can act on."""
    if found:
        places = _names([f"{p.relative_to(upload).as_posix()}/" for p in found])
        return f"Not graded: your upload holds {len(found)} submissions ({places}): upload one."
    archives = _archives(upload)
    if len(archives) > 1:
        return (
            f"Not graded: your upload holds {len(archives)} archives ({_names(archives)}) and "
            f"no submission: upload one of them, or {NEEDS} themselves."
        )
    if archives:
        return (
            f"Not graded: your upload holds {_names(archives)}, an archive the grader does not "
            f"unpack (it unpacks {', '.join(SUFFIXES)}): upload {NEEDS} themselves, or a zip "
            "of them."
        )
    top = sorted(os.listdir(upload)) if upload.is_dir() else []
    holds = f" (it holds {_names(top)})" if top else " (it is empty)"
    return (
        f"Not graded: {NEEDS} were not found in your upload{holds}: upload them, or a zip of them."
    )
