"""The trusted bundle a run grades with: `trusted/` (the harness and the graded tests),
`fixtures/` and the known mistakes' table, built without what is withheld (`WITHHELD`) and
verified by SHA-256 after every submission (docs/architecture.md, "The trusted bundle")."""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from cs336_harness import withheld
from cs336_harness.grading.sandbox import interpreter
from cs336_harness.paths import REPO_ROOT, user_cache

# Folders relative to the repository root, withheld with everything below them.
WITHHELD = (
    "cs336_staff",
    "tests/evidence",
    "tests/package",
    "tests/harness",
    "tests/meta",
    "tests/grading",
    "tests/platforms",
)
# The table of the known mistakes' outputs that the judge reads in place of the catalog.
DIAGNOSIS_TABLE = "diagnosis.safetensors"
# Graded runs use the submission's adapters and the fixtures passed to them.
NOT_TRUSTED_TESTS = ("tests/adapters.py", "tests/fixtures")
# Never copied anywhere: build and tool debris.
DEBRIS = ("__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache")
# The graded run's pytest configuration: none of the project's options apply to it.
PYTEST_INI = "[pytest]\n# Written by cs336-grade: graded runs take no options from the project.\n"


def is_withheld(relative: Path, withheld: tuple[str, ...] = WITHHELD) -> bool:
    text = relative.as_posix()
    return any(text == w or text.startswith(f"{w}/") for w in withheld)


def copy_tree(
    source: Path,
    dest: Path,
    root: Path,
    skip: tuple[str, ...] = (),
    withheld: tuple[str, ...] = WITHHELD,
) -> None:
    """Copy `source` to `dest`: only shared paths (relative to `root`; `withheld` is what
    is not shared), no debris, no `skip`."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        ignored = set(shutil.ignore_patterns(*DEBRIS)(directory, names))
        for name in names:
            path = Path(directory) / name
            relative = path.relative_to(root)
            if is_withheld(relative, withheld) or relative.as_posix() in skip:
                ignored.add(name)
        return ignored

    shutil.copytree(source, dest, ignore=ignore)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digests(directory: Path) -> dict[str, str]:
    """SHA-256 of every file below `directory`, keyed by its relative POSIX path."""
    return {
        p.relative_to(directory).as_posix(): sha256(p)
        for p in sorted(directory.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


def differences(directory: Path, expected: dict[str, str]) -> list[str]:
    """Every way `directory` departs from `expected`, one line each; empty when identical."""
    actual = digests(directory)
    problems = [f"{name} was deleted" for name in sorted(expected.keys() - actual.keys())]
    problems += [f"{name} was added" for name in sorted(actual.keys() - expected.keys())]
    problems += [
        f"{name} was modified"
        for name in sorted(expected.keys() & actual.keys())
        if actual[name] != expected[name]
    ]
    return problems


def remove_tree(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)


@dataclass(frozen=True)
class Bundle:
    """A verified private copy of the trusted files that every judge reads."""

    root: Path
    expected: dict[str, str]

    @property
    def trusted(self) -> Path:
        return self.root / "trusted"

    @property
    def fixtures(self) -> Path:
        return self.root / "fixtures"

    @property
    def diagnosis_table(self) -> Path | None:
        """The known mistakes' outputs on the fixtures that a handout ships, for the judge's
        failure messages (a copy with the catalog has a family's written as failures ask:
        `family_tables`)."""
        table = self.root / DIAGNOSIS_TABLE
        return table if table.is_file() else None

    def problems(self, directory: Path | None = None) -> list[str]:
        """How `directory` (default: the bundle itself) differs from what was built."""
        return differences(directory or self.root, self.expected)


def build_bundle(repo: Path, fixtures: Path | None, dest: Path) -> Bundle:
    """Copy the trusted harness, tests and `fixtures` from `repo` into `dest` (None: no
    fixtures, each submission brings its own drawn inputs)."""
    trusted = dest / "trusted"
    copy_tree(repo / "cs336_harness", trusted / "cs336_harness", repo)
    copy_tree(repo / "tests", trusted / "tests", repo, skip=NOT_TRUSTED_TESTS)
    (trusted / "pytest.ini").write_text(PYTEST_INI)
    if fixtures is None:
        return Bundle(dest, digests(dest))
    shutil.copytree(fixtures, dest / "fixtures", ignore=shutil.ignore_patterns(*DEBRIS))
    # The judge cannot import the catalog of known mistakes (it needs the oracle). Where this
    # copy has it, the judge has a family's outputs written as failures ask for them
    # (`family_tables`); a copy without it (the handout) copies the table it ships when the
    # fixtures are the ones it was written for, and diagnoses nothing otherwise.
    from cs336_harness.judging.diagnosis.diagnose import SHIPPED_TABLE, shipped_table

    if not withheld.available(withheld.CATALOG) and shipped_table(repo, dest / "fixtures"):
        shutil.copyfile(repo / SHIPPED_TABLE, dest / DIAGNOSIS_TABLE)
    return Bundle(dest, digests(dest))


def draw_environment(
    private: Path, repo: Path = REPO_ROOT, site: list[str] | None = None
) -> dict[str, str]:
    """The fixed environment of a process that draws inputs or writes a table, from `repo`'s
    code then `site` (default: this process's packages), `private` its home and temp, with
    the grader's own table cache (`table_cache`) and one OpenMP thread, as the judge and the
    worker have: a draw's tensors are small, and beside other work a second thread spins (a
    third more CPU, for no less wall-clock time)."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}
    env |= {"HOME": str(private), "TMPDIR": str(private)}
    env |= {"XDG_CACHE_HOME": str(user_cache())}
    return interpreter.environment([str(repo)], env, site)
