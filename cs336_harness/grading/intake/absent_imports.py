"""What a submission imports that the grading environment lacks, read from its source (never
run) for the reports: an absolute import, outside a `try` that handles ImportError, of a name
neither the standard library's, the environment's, nor the submission's own."""

from __future__ import annotations

import ast
import importlib.machinery
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.grading.worker.stand_ins import optional_lines
from cs336_harness.rules.static_scan import MAX_BYTES

# On the worker's import path besides site-packages: the harness, mounted in the sandbox.
ALSO_OFFERED = frozenset({"cs336_harness"})


@dataclass(frozen=True, order=True)
class AbsentImport:
    """`module` (a top-level name) imported at `path`:`line`, `path` relative to the
    submission."""

    module: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.module} ({self.path}:{self.line})"


def _imported(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(top-level module name, line) of every absolute import outside an optional `try`."""
    optional = optional_lines(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and node.lineno not in optional:
            for alias in node.names:
                yield alias.name.partition(".")[0], node.lineno
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and not node.level
            and node.lineno not in optional
        ):
            yield node.module.partition(".")[0], node.lineno


def _own(root: Path) -> set[str]:
    """The submission's top-level names: its folders and its modules."""
    names = set()
    for entry in root.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            names.add(entry.name)
        elif entry.suffix == ".py":
            names.add(entry.stem)
    return names


def absent_imports(root: Path, site: Sequence[str]) -> list[AbsentImport]:
    """Each module the submission's files under `root` import that neither Python, the
    environment whose site-packages are `site`, nor the submission itself offers; the first
    import of each, by path and line."""
    own = _own(root)
    first: dict[str, AbsentImport] = {}
    known: dict[str, bool] = {}
    for file in sorted(root.rglob("*.py")):
        if file.is_symlink() or not file.is_file() or file.stat().st_size > MAX_BYTES:
            continue
        relative = file.relative_to(root).as_posix()
        try:
            tree = ast.parse(file.read_bytes(), filename=relative)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OSError):
            continue  # the rules' reading lists the files it could not parse
        for name, line in _imported(tree):
            if name in own:
                continue
            if name not in known:
                known[name] = (
                    name in sys.stdlib_module_names
                    or name in ALSO_OFFERED
                    or importlib.machinery.PathFinder.find_spec(name, list(site)) is not None
                )
            found = AbsentImport(name, relative, line)
            if not known[name] and (
                name not in first or (relative, line) < (first[name].path, first[name].line)
            ):
                first[name] = found
    return sorted(first.values(), key=lambda a: (a.path, a.line))
