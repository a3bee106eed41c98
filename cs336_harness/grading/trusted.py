"""The trusted files a graded run uses, copied once into a bundle and verified by SHA-256.

A bundle holds `trusted/` (the harness package and the test files, on the child's import
path ahead of the submission) and `fixtures/`. Its digests are taken when it is built; every
copy a submission runs on is checked against them afterwards, which is the real guard: the
grader runs as root, so read-only permissions on the copies only document the intent.

Paths that hold a reference implementation (the float64 oracle, the fused-op adapters, the
deliberately wrong adapters built on correct ones) or exist only for the harness's own
development are left out of the bundle (a submission could import them) and out of the
student handout alike. So are test files without a `family` marker: they are not graded,
and may need what is withheld (the oracle) or test cs336_basics directly.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

# Relative to the repository root; a directory covers everything below it.
WITHHELD = (
    "cs336_harness/oracle",
    "cs336_harness/fixturegen",
    "cs336_harness/error_margins.py",
    "tests/fused_adapters.py",
    "tests/wrong_adapters",
    "tests/grading",
)
# Never copied anywhere: build and tool debris.
DEBRIS = ("__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache")
# The graded run's pytest configuration: none of the project's options apply to it.
PYTEST_INI = "[pytest]\n# Written by cs336-grade: graded runs take no options from the project.\n"


def is_withheld(relative: Path) -> bool:
    text = relative.as_posix()
    return any(text == w or text.startswith(f"{w}/") for w in WITHHELD)


def has_family_marker(path: Path) -> bool:
    """Whether a test file uses `pytest.mark.family(...)` (as `pytestmark` or a decorator)."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "family"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
        for node in ast.walk(tree)
    )


def is_shared(path: Path, root: Path) -> bool:
    """Whether a file or directory under `root` goes into bundles and handouts."""
    if is_withheld(path.relative_to(root)):
        return False
    if path.is_file() and path.name.startswith("test_") and path.suffix == ".py":
        return has_family_marker(path)
    return True


def copy_tree(source: Path, dest: Path, root: Path, skip: tuple[str, ...] = ()) -> None:
    """Copy `source` to `dest`: only shared paths (relative to `root`), no debris, no `skip`."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        ignored = set(shutil.ignore_patterns(*DEBRIS)(directory, names))
        for name in names:
            path = Path(directory) / name
            if not is_shared(path, root) or path.relative_to(root).as_posix() in skip:
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


def set_read_only(directory: Path, read_only: bool = True) -> None:
    """chmod a tree read-only (or back to writable, so that it can be deleted)."""
    paths = [directory, *directory.rglob("*")]
    for path in paths:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        write = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
        os.chmod(path, mode & ~write if read_only else mode | stat.S_IWUSR)


def remove_tree(directory: Path) -> None:
    if directory.exists():
        set_read_only(directory, read_only=False)
        shutil.rmtree(directory)


@dataclass(frozen=True)
class Bundle:
    """A verified private copy of the trusted files, the source of every workspace."""

    root: Path
    expected: dict[str, str]

    @property
    def trusted(self) -> Path:
        return self.root / "trusted"

    @property
    def fixtures(self) -> Path:
        return self.root / "fixtures"

    def problems(self, directory: Path | None = None) -> list[str]:
        """How `directory` (a workspace copy; default: the bundle itself) differs from it."""
        return differences(directory or self.root, self.expected)


def build_bundle(repo: Path, fixtures: Path, dest: Path) -> Bundle:
    """Copy the trusted harness, tests and `fixtures` from `repo` into `dest`."""
    trusted = dest / "trusted"
    copy_tree(repo / "cs336_harness", trusted / "cs336_harness", repo)
    # Graded runs use the submission's adapters and the fixtures passed to them.
    copy_tree(repo / "tests", trusted / "tests", repo, skip=("tests/adapters.py", "tests/fixtures"))
    (trusted / "pytest.ini").write_text(PYTEST_INI)
    shutil.copytree(fixtures, dest / "fixtures", ignore=shutil.ignore_patterns(*DEBRIS))
    return Bundle(dest, digests(dest))
