"""The known mistakes' table of a set of fixtures, kept in the user's cache between runs, named
by the SHA-256 of the fixtures' manifest and of the source that computes it
(docs/architecture.md, "The trusted bundle")."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from cs336_harness.manifest import MANIFEST_NAME
from cs336_harness.paths import REPO_ROOT, user_cache

# What computes a table: its source, hashed into the table's name.
SOURCES = ("cs336_staff", "cs336_harness/judging/diagnosis")
KEPT = 8


def cache_dir() -> Path:
    return user_cache() / "cs336-grade" / "diagnosis"


def key(fixtures: Path, repo: Path = REPO_ROOT) -> str:
    """The name of `fixtures`' table: what it is computed from, hashed."""
    digest = hashlib.sha256((fixtures / MANIFEST_NAME).read_bytes())
    for source in SOURCES:
        for path in sorted((repo / source).rglob("*.py")):
            digest.update(path.relative_to(repo).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def table(fixtures: Path, dest: Path) -> None:
    """Write the known mistakes' table of `fixtures` to `dest`, from the cache when it has
    it, computed (and kept) otherwise."""
    from cs336_harness.judging.diagnosis.diagnose import write_table

    folder = cache_dir()
    cached = folder / f"{key(fixtures)}.safetensors"
    if cached.is_file():
        shutil.copyfile(cached, dest)
        os.utime(cached)  # the newest kept
        return
    # Computing it imports torch (a cache hit does not): one thread, as a draw has
    # (`bundle.draw_environment`); the grader holds torch for nothing else.
    import torch

    torch.set_num_threads(1)
    write_table(fixtures, dest)
    with contextlib.suppress(OSError):  # no cache is no failure
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, partial = tempfile.mkstemp(dir=folder, suffix=".partial")
        os.close(handle)
        shutil.copyfile(dest, partial)
        os.replace(partial, cached)  # whole, or not there: graders may share the cache
        _trim(folder)


def _trim(folder: Path) -> None:
    tables = sorted(folder.glob("*.safetensors"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in tables[KEPT:]:
        with contextlib.suppress(OSError):
            old.unlink()
