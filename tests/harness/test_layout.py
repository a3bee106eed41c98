"""The handout's boundary is a set of folders, and nothing shipped reaches across it.

`cs336_harness/grading/inputs/bundle.py`'s `WITHHELD` names the folders that neither the
grader's bundle nor the student handout has. A shipped module that imported one of them
would work here and break in every handout; the one sanctioned way across is
`cs336_harness/withheld.py`, which asks by name and only where the folder exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cs336_harness.grading.inputs.bundle import WITHHELD, is_withheld
from cs336_harness.paths import REPO_ROOT

# The shipped Python: the bundled package (stubbed in the handout), the harness, and the
# graded tests with the files upstream has beside them.
SHIPPED_ROOTS = ("cs336_basics", "cs336_harness", "tests")
DOOR = REPO_ROOT / "cs336_harness" / "withheld.py"
WITHHELD_MODULES = tuple(folder.replace("/", ".") for folder in WITHHELD)


def _spelled(module: str) -> str:
    """`module` as source may spell it: spaces or line continuations around its dots."""
    return r"[\s\\]*\.[\s\\]*".join(map(re.escape, module.split(".")))


# What a file must hold to name a withheld module at all, where parsing it is what the scan of
# some 200 files costs (0.6 s of every run otherwise). An import or a string names the module
# in full, or names its last part after `from <parent> import` or in a relative import. A
# looser match only parses a file more: no word boundaries, so each pattern starts with
# letters the regular expression engine searches for fast.
_IN_FULL = re.compile("|".join(_spelled(m) for m in WITHHELD_MODULES))
_BY_LAST_PART = [
    (
        re.compile(rf"from[\s\\]+(?:{_spelled(parent)}[\s\\]+import|\.)"),
        re.compile(
            "|".join(m.rpartition(".")[2] for m in WITHHELD_MODULES if m.startswith(parent + "."))
        ),
    )
    for parent in sorted({m.rpartition(".")[0] for m in WITHHELD_MODULES} - {""})
]


def shipped_files() -> list[Path]:
    return [
        path
        for root in SHIPPED_ROOTS
        for path in sorted((REPO_ROOT / root).rglob("*.py"))
        if not is_withheld(path.relative_to(REPO_ROOT))
    ]


def module_of(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) for every module an import statement names, anywhere in the file;
    `from a import b` names both `a` and `a.b` (b may be a submodule)."""
    package = module_of(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_of(path)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names += [(node.lineno, base)]
            names += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return names


def crossings(path: Path, source: bytes | None = None) -> list[str]:
    """Where `path` (or `source`, as if it were there) names a withheld module: in an import,
    or as a string (importlib)."""
    source = path.read_bytes() if source is None else source
    text = source.decode("utf-8", errors="replace")
    if not _IN_FULL.search(text) and not any(
        way.search(text) and last.search(text) for way, last in _BY_LAST_PART
    ):
        return []
    tree = ast.parse(source, filename=str(path))
    found = [
        f"line {line}: import {name}"
        for line, name in imported(path, tree)
        if any(name == w or name.startswith(f"{w}.") for w in WITHHELD_MODULES)
    ]
    if path != DOOR:
        found += [
            f"line {node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            # A bare top-level name is a folder's as often as a module's: `WITHHELD` itself.
            and any(node.value.startswith(f"{w}.") for w in WITHHELD_MODULES)
        ]
    return found


def test_the_withheld_folders_exist_and_the_shipped_ones_are_not_among_them():
    assert all((REPO_ROOT / folder).is_dir() for folder in WITHHELD), WITHHELD
    assert (REPO_ROOT / "tests" / "families").is_dir()
    assert not is_withheld(Path("tests/families/test_rope.py"))
    assert not is_withheld(Path("tests/adapters.py"))
    assert is_withheld(Path("cs336_staff/oracle/model.py"))


def test_no_shipped_module_imports_a_withheld_one():
    files = shipped_files()
    assert len(files) > 50
    found = {module_of(p): c for p in files if (c := crossings(p))}
    assert not found, f"shipped modules that reach into withheld folders: {found}"


@pytest.mark.parametrize(
    "source",
    [
        "from cs336_staff import oracle\n",
        "def f():\n    import cs336_staff.catalog.model\n",
        "from tests.evidence.wrong import _mistakes\n",
        "from ..evidence import fused\n",
        "from .. import evidence\n",
        "from tests import (\n    evidence,\n)\n",
        "import tests . meta\n",
        "import tests.\\\n    harness\n",
        "import importlib\nimportlib.import_module('cs336_staff.fixturegen')\n",
    ],
)
def test_a_crossing_is_found(source):
    # The check itself must see each way across, as written in a graded test's file.
    assert crossings(REPO_ROOT / "tests" / "families" / "test_x.py", source.encode())
