"""Stand-ins, in the worker, for third-party modules the grading environment lacks: importing
one works, using what it holds raises `AbsentModuleError`, so only the tests whose code
reaches it fail (docs/architecture.md, "Stand-ins for absent modules")."""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import inspect
import os
import sys
import types
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

from cs336_harness.grading.sandbox.interpreter import COURSE_PACKAGES

# Exceptions whose handler makes an import optional: `except ImportError: fallback`.
HANDLES_IMPORT_ERROR = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


class AbsentModuleError(ModuleNotFoundError):
    """The submission used a module the grading environment does not have."""


def _message(name: str, where: str) -> str:
    offered = os.environ.get(COURSE_PACKAGES, "").replace(",", ", ")
    offers = f"; it offers Python's standard library and {offered}" if offered else ""
    return f"the grading environment has no module {name!r} (imported at {where}){offers}"


class Absent:
    """Anything reached through a stand-in module: `wandb.init`, `DictConfig`."""

    __slots__ = ("_module", "_name", "_where")

    def __init__(self, module: str, name: str, where: str):
        self._module, self._name, self._where = module, name, where

    def _fail(self, *args: Any, **kwargs: Any) -> NoReturn:
        error = AbsentModuleError(_message(self._module, self._where), name=self._module)
        raise error

    def __getattr__(self, attr: str) -> Absent:
        if attr.startswith("__"):  # protocols Python probes for (copy, pickle, typing)
            raise AttributeError(attr)
        return Absent(self._module, f"{self._name}.{attr}", self._where)

    def __getitem__(self, key: object) -> Absent:  # `Optional[DictConfig]`-like generics
        return self

    def __or__(self, other: object) -> Absent:  # `DictConfig | None` in an annotation
        return self

    __ror__ = __or__

    def __mro_entries__(self, bases: tuple[object, ...]) -> tuple[type, ...]:
        # A class that subclasses it is defined; making an instance is a use.
        module, where = self._module, self._where

        class Unavailable:
            def __init__(self, *args: Any, **kwargs: Any):
                raise AbsentModuleError(_message(module, where), name=module)

        Unavailable.__qualname__ = Unavailable.__name__ = self._name.rpartition(".")[2]
        return (Unavailable,)

    def __repr__(self) -> str:
        return f"<{self._name}: absent from the grading environment>"

    __call__ = __iter__ = __bool__ = __len__ = __enter__ = __index__ = _fail


class AbsentModule(types.ModuleType):
    """The stand-in for a module: attributes are `Absent`, submodules stand-ins too."""

    def __init__(self, name: str, where: str):
        super().__init__(name, f"absent from the grading environment (imported at {where})")
        self.__path__: list[str] = []  # a package, so that `import wandb.sdk` finds one too
        self._where = where

    def __getattr__(self, attr: str) -> Absent:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Absent(self.__name__.partition(".")[0], f"{self.__name__}.{attr}", self._where)


class _Loader(importlib.abc.Loader):
    def __init__(self, where: str):
        self.where = where

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return AbsentModule(spec.name, self.where)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def optional_lines(tree: ast.AST) -> frozenset[int]:
    """The lines inside a `try` whose handlers catch ImportError: an import there is
    optional, and its fallback the code's own answer."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try | ast.TryStar) and any(
            _handles_import_error(h.type) for h in node.handlers
        ):
            for statement in node.body:
                lines.update(range(statement.lineno, (statement.end_lineno or 0) + 1))
    return frozenset(lines)


@cache
def _optional_lines(filename: str) -> frozenset[int]:
    try:
        return optional_lines(ast.parse(Path(filename).read_bytes(), filename))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()


def _handles_import_error(kind: ast.expr | None) -> bool:
    if kind is None:  # a bare `except:`
        return True
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(
        (n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else "")
        in HANDLES_IMPORT_ERROR
        for n in names
    )


def _above_machinery(frame: types.FrameType | None) -> types.FrameType | None:
    """`frame`, or the first frame above it that is not the import machinery's or this file's."""
    while frame is not None and (
        frame.f_code.co_filename.startswith("<") or frame.f_code.co_filename == __file__
        or frame.f_globals.get("__name__") == "importlib"
    ):  # fmt: skip
        frame = frame.f_back
    return frame


def _is_module_getattr(frame: types.FrameType) -> bool:
    """Whether `frame` runs a module's own `__getattr__` (PEP 562's lazy attributes), also
    behind a decorator that keeps `__wrapped__` (jaxtyping caches its own)."""
    own = frame.f_globals.get("__getattr__")
    if frame.f_code.co_name != "__getattr__" or own is None:
        return False
    return getattr(inspect.unwrap(own), "__code__", None) is frame.f_code


class StandInFinder(importlib.abc.MetaPathFinder):
    """Last on `sys.meta_path`: asked only when no other finder knows a module."""

    def __init__(self, root: Path):
        self.root = root

    def _importer(self) -> tuple[str, int] | None:
        """The file and line of the first frame above the import machinery."""
        frame = _above_machinery(sys._getframe(2))
        if frame is not None and _is_module_getattr(frame):
            # `from jaxtyping import Array` runs jaxtyping's module-level __getattr__ (for a
            # package, through the machinery's fromlist handling), which imports jax: the
            # import is made on behalf of the line that asked.
            frame = _above_machinery(frame.f_back)
        if frame is None:
            return None
        return frame.f_code.co_filename, frame.f_lineno

    def find_spec(
        self, fullname: str, path: Any, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        parent = sys.modules.get(fullname.rpartition(".")[0])
        if isinstance(parent, AbsentModule):  # `import wandb.sdk` below a stand-in
            return importlib.machinery.ModuleSpec(fullname, _Loader(parent._where))
        if path is not None or fullname in sys.builtin_module_names:
            return None
        importer = self._importer()
        if importer is None or not Path(importer[0]).is_relative_to(self.root):
            return None  # a library's own optional import: it must see ImportError
        filename, line = importer
        if line in _optional_lines(filename):
            return None
        where = f"{Path(filename).relative_to(self.root).as_posix()}:{line}"
        return importlib.machinery.ModuleSpec(fullname, _Loader(where))


def install(root: Path) -> None:
    """Stand in for absent modules imported by code under `root` (the submission)."""
    sys.meta_path.append(StandInFinder(root))
