"""The judge's known mistakes' tables, one family at a time: each written the first time a
failure of that family asks for it, by a process of the grader's own copy (the bundle
withholds the catalog), into the run's private folder, where every judge of the run finds it.
Inputs drawn once for many gradings bring all of them (`write_all`), which a run on them
puts in that folder (`adopt`) (docs/architecture.md, "The trusted bundle")."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cs336_harness.grading.inputs import table_cache
from cs336_harness.grading.inputs.bundle import draw_environment
from cs336_harness.grading.sandbox import interpreter
from cs336_harness.manifest import fixtures_digest
from cs336_harness.paths import REPO_ROOT

# A family's table takes seconds at most (the language model's, about 3 s of CPU here); a
# judge waits this long for one, then diagnoses without it.
TIMEOUT_S = 300
# The table of no family: the catalog's messages and each mistake's families alone.
NO_FAMILY = "catalog"
# The folder of tables: a run's (one folder per fixtures' digest in it) or drawn inputs'.
TABLES = "diagnosis"


def file_name(family: str) -> str:
    return f"{family or NO_FAMILY}.safetensors"


def write_all(fixtures: Path, dest: Path) -> None:
    """Every family's table of `fixtures`, and the table of none, into the folder `dest`:
    for inputs drawn once for many gradings (`cs336-grade draw`), where failures would
    otherwise have each grading write its own."""
    from cs336_harness.judging.diagnosis.diagnose import LiveCatalog  # NumPy: not the grader's

    dest.mkdir(parents=True, exist_ok=True)
    for family in ["", *sorted(LiveCatalog(fixtures).families)]:
        table_cache.table(fixtures, dest / file_name(family), family)


def adopt(tables: Path, fixtures: Path, folder: Path) -> None:
    """Put the tables `write_all` wrote for `fixtures` in a run's `folder`, where the judges
    look first."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    shutil.copytree(tables, folder / fixtures_digest(fixtures), dirs_exist_ok=True)


def family_table(folder: Path, repo: Path, fixtures: Path, family: str) -> Path | None:
    """`fixtures`' table of `family` ("": of none) in `folder`, written there by
    `table_cache` run from `repo`'s code where no judge has written it yet; None, with the
    reason on stderr (the judge's log), where it could not be."""
    dest = folder / fixtures_digest(fixtures) / file_name(family)
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Two judges failing the same family at once: one writes its table, the other waits.
    with (dest.parent / f"{dest.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if dest.is_file():
            return dest
        partial = dest.with_name(f"{dest.name}.partial")
        module = "cs336_harness.grading.inputs.table_cache"
        command = interpreter.command(module, str(fixtures), str(partial), family)
        # The judge's packages: its import path less its own copy (REPO_ROOT, here the
        # bundle's, whose digests no bytecode may change). Under `-S` in a virtual
        # environment sysconfig names the base interpreter's, so `interpreter.site_packages`
        # is right in the grader alone.
        path = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        site = [p for p in path if p and p != str(REPO_ROOT)]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                cwd=folder,
                env=draw_environment(folder, repo, site),
            )
        except subprocess.TimeoutExpired:
            print(f"the known mistakes of {family} took over {TIMEOUT_S} s", file=sys.stderr)
            return None
        if done.returncode != 0:
            print(f"the known mistakes of {family} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
            return None
        # Whole or not there: a judge killed mid-write leaves no half table to read.
        os.replace(partial, dest)
    return dest
