"""The adapters module under test, found and called: an `Adapters` object whose `run_*`
attributes forward to the module `--adapters` names, each failure in one line
(docs/checking.md, "Checking your own implementation")."""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _pytest.outcomes import Failed

from cs336_harness.adapters import inputs_unchanged
from cs336_harness.adapters.not_implemented import in_library, message, where_raised
from cs336_harness.adapters.probes.registry import needs_of, run_probe
from cs336_harness.adapters.submission_imports import (
    checkout_of,
    import_adapters,
    installed_for,
    uninstall,
)
from cs336_harness.cost import yardstick
from cs336_harness.cost.cpu import call_cpu_seconds
from cs336_harness.paths import DEFAULT_ADAPTERS

ENV_VAR = "CS336_ADAPTERS"


class NotImplementedFailure(Failed):
    """A test failed because the adapter it needs is missing or raises NotImplementedError.

    A subclass of pytest's own failure outcome, so pytest prints only the message, and the
    grader can tell "not implemented" apart from "wrong".
    """


class AdapterImportFailure(Failed):
    """The adapters module itself could not be imported: under the grader, a failure of every
    test of that submission (locally the session stops instead, `UnimportableAdapters`)."""


class SubmissionRaised(Exception):
    """Under the grader, the submission's adapter raised in the worker; the message is the
    exception's type and message (the exception itself never crosses into the judge)."""


class UnimportableAdapters(Exception):
    """The adapters module named cannot be found or imported; the message is one line."""


def looks_like_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _load_from_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise FileNotFoundError(f"no adapters file at {path}")
    # A file at <dir>/tests/adapters.py is a student's checkout: it and everything it imports,
    # now or inside a run_* function, come from <dir> (`submission_imports`).
    if checkout_of(path) is not None:
        return import_adapters(path)
    uninstall()  # a checkout graded before in this process is done with
    module_name = "cs336_adapters_under_test"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def load_module(spec: str) -> ModuleType:
    """Import `spec`, a dotted module name (`my_pkg.adapters`) or a path to a `.py` file."""
    if looks_like_path(spec):
        return _load_from_file(Path(spec).expanduser().resolve())
    uninstall()
    return importlib.import_module(spec)


def resolve_spec(option_value: str | None, environ: dict[str, str]) -> str:
    """The command-line option wins over the environment variable, which wins over the default."""
    return option_value or environ.get(ENV_VAR) or str(DEFAULT_ADAPTERS)


def _outside_libraries(filename: str) -> bool:
    return not (in_library(filename) or filename == __file__)


def describe_import_error(spec: str, error: BaseException) -> str:
    """One line for an adapters module that did not import: the spec, the exception's last
    line, and the innermost line of the student's code it came from (not the standard
    library's, an installed package's or this loader's)."""
    if looks_like_path(spec) and not Path(spec).expanduser().is_file():
        return f"no adapters file at {Path(spec).expanduser().resolve()}"
    if (
        isinstance(error, ModuleNotFoundError)
        and error.name
        and (spec + ".").startswith(error.name + ".")
    ):
        return f"adapters {spec!r} is no importable module ({error}); a file is named by its path"
    return f"cannot import adapters {spec!r}: {exception_line(error)}"


def exception_line(error: BaseException) -> str:
    """The exception's type and message on one line, and the innermost line of the student's
    code it came from (a SyntaxError's message already says where)."""
    line = " ".join(f"{type(error).__name__}: {error}".split()).removesuffix(":")
    if not isinstance(error, SyntaxError):
        tb = traceback.extract_tb(error.__traceback__)
        frames = [frame for frame in tb if _outside_libraries(frame.filename)]
        if frames:
            line += f" (at {frames[-1].filename}:{frames[-1].lineno})"
    return line


class Adapters:
    """The `run_*` functions of one adapters module, wrapped for one-line failure messages."""

    def __init__(self, spec: str):
        self.spec = spec
        try:
            self.module = load_module(spec)
        except (Exception, SystemExit) as error:  # sys.exit() at import is reported too
            raise UnimportableAdapters(describe_import_error(spec, error)) from error
        self._imports = installed_for(self.module)

    def _activate(self) -> None:
        """Before running submission code: its checkout's imports first again."""
        if self._imports is not None:
            self._imports.activate()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if not name.startswith("run_"):
            raise AttributeError(name)
        function = getattr(self.module, name, None)
        if not callable(function):
            raise NotImplementedFailure(message(name), pytrace=False)

        def call(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            self._activate()
            args, kwargs = _own_copies(args, kwargs)
            before = inputs_unchanged.fingerprints(args, kwargs)
            try:
                result = function(*args, **kwargs)
            except NotImplementedError as error:
                where = where_raised(error, self.module, [name])
                raise NotImplementedFailure(message(name, where), pytrace=False) from None
            changed = inputs_unchanged.changed(before)
            if changed:
                pytest.fail(inputs_unchanged.message(name, ", ".join(changed)), pytrace=False)
            return result

        return call

    def measured(self, name: str, kwargs: dict[str, Any]) -> tuple[Any, float]:
        """Run the probe `name` as `probe` does; its value and the CPU seconds it took, of
        this process's threads and of every process it started (`cost.cpu`)."""
        __tracebackhide__ = True
        with _collection_paused():
            start = call_cpu_seconds()
            value = self.probe(name, kwargs)
            return value, call_cpu_seconds() - start

    def measured_call(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], times: int = 1
    ) -> tuple[Any, float]:
        """Call the adapter `name` once as any call is made (its failures reported so), then
        `times` times more, timed: the value, and the CPU seconds those took (as
        `measured`). The timed calls skip the check of inputs changed in place, which the
        grader's worker makes once a request."""
        __tracebackhide__ = True
        value = getattr(self, name)(*args, **kwargs)
        function = getattr(self.module, name)
        with _collection_paused():
            start = call_cpu_seconds()
            for _ in range(times):
                own_args, own_kwargs = _own_copies(args, kwargs)
                function(*own_args, **own_kwargs)
            return value, call_cpu_seconds() - start

    def yardstick(self) -> float:
        """The yardstick's CPU seconds, timed in this process (`cost.yardstick`)."""
        return yardstick.seconds()

    def probe(self, name: str, kwargs: dict[str, Any]) -> Any:
        """Run the probe `name` (`cs336_harness.adapters.probes`) against the module, here."""
        __tracebackhide__ = True
        self._activate()
        try:
            return run_probe(self.module, name, kwargs)
        except NotImplementedError as error:
            needs = needs_of(name)
            text = message(" and ".join(needs), where_raised(error, self.module, needs))
            raise NotImplementedFailure(text, pytrace=False) from None


def _own_copies(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The call's arguments with each dictionary (a `weights` state dict) shallow-copied:
    every call gets dictionaries of its own, as upstream's tests and the grader's worker
    give them, so an adapter may take its own apart (`weights.pop(...)`)."""
    own = [dict(a) if isinstance(a, dict) else a for a in args]
    return tuple(own), {k: dict(v) if isinstance(v, dict) else v for k, v in kwargs.items()}


def is_not_implemented(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    return excinfo is not None and excinfo.errisinstance(NotImplementedFailure)


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """No garbage collection while a call is timed, as `timeit` times: in this process (a
    student's pytest, the meta-test's runs inside pytest) a full collection walks every
    object the session holds, a tenth of a second or more, and would be charged to
    whichever call it fell in (a correct encode read 188 ms against 17 ms so)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
