"""Imports of a submission's code resolve to the submission's checkout, whenever they happen:
a `SubmissionFinder` first on `sys.meta_path` (docs/maintaining.md, "A submission's
imports")."""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import sys
import sysconfig
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

from cs336_harness.handout_common import fixtures_path, gpt2_bytes_to_unicode
from cs336_harness.paths import REPO_ROOT

PACKAGE = "cs336_basics"
TESTS = "tests"
COMMON = "common"
# Top-level names a checkout never takes over: the harness's own packages, which the local
# session imports after the adapters (the catalog of known mistakes, the diagnosis).
HARNESS_NAMES = frozenset({"cs336_harness", "cs336_staff"})
# pytest's: a checkout's conftest.py is neither taken over nor hidden, but left to pytest.
CONFTEST = "conftest"


def checkout_of(adapters: Path) -> Path | None:
    """The checkout an adapters file belongs to: the folder holding its `tests/` folder;
    None for a file elsewhere (a single module of adapters, as `tests/evidence/fused.py`)."""
    return adapters.parent.parent if adapters.parent.name == TESTS else None


def _environment_roots() -> list[str]:
    """Where Python and the environment's packages are. The worker runs with `-S`, where
    sysconfig names the base interpreter's site-packages, so those on `sys.path` count too."""
    paths = sysconfig.get_paths()
    roots = [paths[name] for name in ("stdlib", "platstdlib", "purelib", "platlib")]
    roots += [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    return list(dict.fromkeys(roots))


def _provided_elsewhere(name: str) -> bool:
    """Whether Python or the environment has a module of this name: a checkout's file of the
    same name (a `regex.py` of notes, a `wandb/` run folder) must not hide it from the
    harness, which shares the process."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return True
    return importlib.machinery.PathFinder.find_spec(name, _environment_roots()) is not None


def _importable_names(folder: Path) -> set[str]:
    """Modules (`name.py`) and packages (`name/` with an `__init__.py`) directly in `folder`."""
    names = set()
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.suffix == ".py" and entry.stem.isidentifier() and entry.is_file():
                names.add(entry.stem)
            elif entry.name.isidentifier() and (entry / "__init__.py").is_file():
                names.add(entry.name)
    return names


def _under(spec: ModuleSpec, folder: Path) -> bool:
    """Whether the module `spec` describes lives in `folder` (a namespace package: any part)."""
    places = [spec.origin] if spec.has_location and spec.origin else []
    places += _search_locations(spec)
    return any(Path(p).resolve().is_relative_to(folder) for p in places)


def _search_locations(spec: ModuleSpec) -> list[str]:
    """A package's folders. A namespace package's are computed again from its parent's,
    which fails once the parent has left `sys.modules`: then the folders last computed."""
    locations = spec.submodule_search_locations
    try:
        return list(locations or [])
    except KeyError:
        return list(getattr(locations, "_path", []))


class _HandoutCommon(importlib.abc.Loader):
    """`tests.common` for a checkout that has none: upstream's helpers, `FIXTURES_PATH`
    pointing where the checkout's own `tests/fixtures` would be."""

    def __init__(self, tests_folder: Path):
        self.tests_folder = tests_folder

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        module.gpt2_bytes_to_unicode = gpt2_bytes_to_unicode
        module.FIXTURES_PATH = fixtures_path(self.tests_folder)
        module.__all__ = ["FIXTURES_PATH", "gpt2_bytes_to_unicode"]


class SubmissionFinder(importlib.abc.MetaPathFinder):
    """Finds the checkout's modules for the names it holds (docs/maintaining.md, "A submission's
    imports")."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.tests = self.root / TESTS
        present = _importable_names(self.root) - {PACKAGE, TESTS, CONFTEST}
        top = present - HARNESS_NAMES
        self.top = {n for n in top if not _provided_elsewhere(n)} | {PACKAGE}
        # The checkout's modules of names it does not own: with the checkout first on
        # `sys.path` they would hide the harness's and the environment's, so they are
        # looked up past it.
        self.shadowed = present - self.top
        harness_tests = sys.modules.get(TESTS)
        own = harness_tests is None or _is_from(harness_tests, self.tests)
        # Locally the harness's `tests` package is imported, from this repository or the
        # handout: it stays, and only the checkout's modules not named like its test folders
        # are served beneath it.
        self.owns_tests = own
        self.test_modules = _importable_names(self.tests)
        if not own:
            self.test_modules -= _harness_test_names(harness_tests) - {COMMON}
        self.test_modules.add(COMMON)

    def owns(self, fullname: str) -> bool:
        """Whether the module called `fullname` is the checkout's to give (or not at all)."""
        head, _, rest = fullname.partition(".")
        if head == TESTS:
            return (not rest and self.owns_tests) or rest.partition(".")[0] in self.test_modules
        return head in self.top

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname in self.top or (fullname == TESTS and self.owns_tests):
            return self._in(self.root, fullname, target)
        if fullname in self.shadowed:
            # Past the checkout, or nowhere: the checkout's copy of the harness's catalog is
            # not the catalog, where a handout has none.
            spec = self._past_checkout(fullname, target)
            if spec is None:
                raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
            return spec
        head, _, rest = fullname.partition(".")
        if head != TESTS or "." in rest or rest not in self.test_modules:
            return None
        spec = self._in(self.tests, fullname, target)
        if spec is None and rest == COMMON:
            return ModuleSpec(fullname, _HandoutCommon(self.tests))
        return spec

    def _in(self, folder: Path, fullname: str, target: ModuleType | None) -> ModuleSpec | None:
        """The spec the other finders give for `fullname` looked up in `folder`, if it is
        there; else the module does not exist, as it would not for the student."""
        return self._ask_others(fullname, [str(folder)], target, lambda s: _under(s, folder))

    def _past_checkout(self, fullname: str, target: ModuleType | None) -> ModuleSpec | None:
        """The spec the other finders give for a top-level `fullname` on `sys.path` without
        the checkout."""
        path = [p for p in sys.path if p != str(self.root)]
        return self._ask_others(fullname, path, target, lambda s: not _under(s, self.root))

    def _ask_others(
        self,
        fullname: str,
        path: list[str],
        target: ModuleType | None,
        accept: Callable[[ModuleSpec], bool],
    ) -> ModuleSpec | None:
        """The first spec another finder on `sys.meta_path` gives for `fullname` on `path`
        that `accept` takes."""
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            try:
                spec = find(fullname, path, target)
            except (ImportError, OSError, ValueError):
                continue
            if spec is not None and accept(spec):
                return spec
        return None

    def activate(self) -> None:
        """Put this finder first on `sys.meta_path` and its checkout first on `sys.path`, if
        anything moved them: pytest puts the repository's root in front again as it
        collects, and a session run inside this one (pytester) restores its own."""
        if sys.meta_path[:1] != [self]:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(self)
            sys.meta_path.insert(0, self)
        if sys.path[:1] != [str(self.root)]:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(self.root))
            sys.path.insert(0, str(self.root))

    def forget_others(self) -> None:
        """Drop the imported modules of the checkout's names that came from elsewhere."""
        others = [
            n for n, m in list(sys.modules.items()) if self.owns(n) and not _is_from(m, self.root)
        ]
        for name in others:
            del sys.modules[name]


def _is_from(module: ModuleType, folder: Path) -> bool:
    spec = getattr(module, "__spec__", None)
    if isinstance(spec, ModuleSpec) and isinstance(spec.loader, _HandoutCommon):
        return spec.loader.tests_folder.resolve().is_relative_to(folder)
    return isinstance(spec, ModuleSpec) and _under(spec, folder.resolve())


def _harness_test_names(package: ModuleType) -> set[str]:
    """The modules and folders of the harness's own `tests` package (and `conftest`)."""
    names = {CONFTEST}
    for folder in getattr(package, "__path__", []):
        names |= _importable_names(Path(folder))
        with contextlib.suppress(OSError):
            names |= {p.name for p in Path(folder).iterdir() if p.is_dir()}
    return names


_installed: SubmissionFinder | None = None


def install(root: Path) -> SubmissionFinder:
    """Make the checkout at `root` the source of its names for the rest of the process (a
    finder installed before, for another checkout, goes)."""
    global _installed
    uninstall()
    _installed = SubmissionFinder(root)
    _installed.activate()
    _installed.forget_others()
    importlib.invalidate_caches()
    return _installed


def uninstall() -> None:
    """Undo `install`: the finder and the checkout's place on `sys.path` go, and so do the
    modules imported from the checkout (a later import finds what `sys.path` gives), also
    where the harness's `tests` package holds them as attributes (`from tests import
    adapters` would find the checkout's adapters there)."""
    global _installed
    finder, _installed = _installed, None
    if finder is None:
        return
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(finder)
    with contextlib.suppress(ValueError):
        sys.path.remove(str(finder.root))
    mine = [n for n, m in list(sys.modules.items()) if finder.owns(n) and _is_from(m, finder.root)]
    for name in mine:
        del sys.modules[name]
    package = sys.modules.get(TESTS)
    for name in finder.test_modules if package is not None else ():
        held = getattr(package, name, None)
        if isinstance(held, ModuleType) and _is_from(held, finder.root):
            delattr(package, name)


def installed_for(module: ModuleType) -> SubmissionFinder | None:
    """The finder that imported `module`, if it is the one installed."""
    finder = _installed
    spec = getattr(module, "__spec__", None)
    if finder is None or not isinstance(spec, ModuleSpec) or not _under(spec, finder.root):
        return None
    return finder


def import_adapters(path: Path) -> ModuleType:
    """Import the adapters file at `path`, `<checkout>/tests/<name>.py`, as `tests.<name>`
    from its checkout: `from .common import ...` inside it is the checkout's too."""
    root = checkout_of(path)
    if root is None:
        raise ValueError(f"{path} is not in a tests/ folder")
    name = f"{TESTS}.{path.stem}"
    if root.resolve() == REPO_ROOT:
        # This checkout's own adapters (the reference, or the handout's stubs): its names
        # are found where they are, beside the harness.
        uninstall()
    else:
        install(root).test_modules.add(path.stem)
    sys.modules.pop(name, None)
    return importlib.import_module(name)
