"""The known mistakes' table of one family of a set of fixtures, kept in the user's cache
between runs, named by the SHA-256 of the fixtures' manifest, the family and the source that
computes it (docs/architecture.md, "The trusted bundle"). `python -m` this module writes one:
what the judge runs, from the grader's own copy, when a failure first asks for a family's
(`family_tables`)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from cs336_harness.manifest import MANIFEST_NAME
from cs336_harness.paths import REPO_ROOT, user_cache

# What computes a table: its source, hashed into the table's name.
SOURCES = ("cs336_staff", "cs336_harness/judging/diagnosis")
# A run keeps the tables of the families its submissions failed: 50 KB to 13 MB each (the
# language model's), where all of a set of fixtures' take 50 MB.
KEPT = 64


def cache_dir() -> Path:
    return user_cache() / "cs336-grade" / "diagnosis"


def key(fixtures: Path, family: str, repo: Path = REPO_ROOT) -> str:
    """The name of `fixtures`' table of `family`: what it is computed from, hashed."""
    digest = hashlib.sha256((fixtures / MANIFEST_NAME).read_bytes())
    digest.update(family.encode() + b"\0")
    for source in SOURCES:
        for path in sorted((repo / source).rglob("*.py")):
            digest.update(path.relative_to(repo).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def table(fixtures: Path, dest: Path, family: str) -> None:
    """Write the known mistakes' table of `fixtures`' `family` to `dest` ("": of no family,
    the catalog's messages and families alone), from the cache when it has it, computed (and
    kept) otherwise. Computing it needs the catalog and NumPy: not torch."""
    from cs336_harness.judging.diagnosis.diagnose import write_table

    folder = cache_dir()
    cached = folder / f"{key(fixtures, family)}.safetensors"
    if cached.is_file():
        shutil.copyfile(cached, dest)
        os.utime(cached)  # the newest kept
        return
    write_table(fixtures, dest, [family] if family else [])
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


def main(argv: list[str]) -> int:
    """`python -m cs336_harness.grading.inputs.table_cache FIXTURES DEST FAMILY`: one
    family's table, the grader's own copy importing the catalog (`family_tables`)."""
    fixtures, dest, family = argv
    table(Path(fixtures), Path(dest), family)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
