"""How the grader starts a Python process: `-P -S`, an environment built from nothing, and an
import path of its own choosing (docs/architecture.md, "The interpreter's import path")."""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterable

# Neither the working directory nor `site`: see the module's docstring.
FLAGS = ("-P", "-S")
# The worker's variable naming the course's packages (comma-separated), which its message
# about a module the environment lacks lists (`grading/worker/stand_ins.py`).
COURSE_PACKAGES = "CS336_COURSE_PACKAGES"


def site_packages() -> list[str]:
    """Where the environment's packages are (torch, pytest, ...): on every import path."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def command(module: str, *args: str, python: str = sys.executable) -> list[str]:
    """`python -P -S -m module args...`."""
    return [python, *FLAGS, "-m", module, *args]


def import_path(first: Iterable[str], site: Iterable[str] | None = None) -> str:
    """A PYTHONPATH of the folders `first`, then site-packages (`site`, default this one's)."""
    return os.pathsep.join([*first, *(site_packages() if site is None else site)])


def environment(
    first: Iterable[str], base: dict[str, str], site: Iterable[str] | None = None
) -> dict[str, str]:
    """`base` (a fixed environment, never the grader's own) with the PYTHONPATH of
    `import_path`; any other `PYTHON*` in `base` is the grader's own choice."""
    return base | {"PYTHONPATH": import_path(first, site)}


def python_paths(prefix: str, base_prefix: str, site: tuple[str, ...]) -> tuple[str, ...]:
    """An interpreter's installation, its standard library and site-packages, without a path
    inside another (its parent's mount covers it)."""
    candidates = [prefix, base_prefix, *site]
    unique = sorted({os.path.realpath(p) for p in candidates} | set(candidates))
    return tuple(p for p in unique if not any(p != q and p.startswith(q + "/") for q in unique))
