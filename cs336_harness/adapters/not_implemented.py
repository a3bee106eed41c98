"""The one line a test fails with when a `NotImplementedError` reaches its adapter: `not
implemented: run_rope`, and where it was raised when that was below the adapter, relative to
the submission (docs/checking.md, "Checking your own implementation")."""

from __future__ import annotations

import contextlib
import inspect
import sys
import sysconfig
import traceback
from collections.abc import Iterable
from pathlib import Path
from types import FrameType, ModuleType

from cs336_harness.untrusted import clean

# The harness package: its frames are never the submission's.
HARNESS = Path(__file__).parent.parent
# The most of a location a message keeps: with the longest needs ("not implemented:
# run_save_checkpoint and run_load_checkpoint → ") it fits the 300 characters the
# grader's record keeps of a message (`record.MESSAGE_CHARS`).
WHERE_CHARS = 200
RAISED = "raised NotImplementedError"


def in_library(filename: str) -> bool:
    """Whether code at `filename` is Python's or an installed package's (or has no file).

    The worker runs with `-S`, where sysconfig names the base interpreter's site-packages
    and not the environment's, so the site-packages folders on `sys.path` count too."""
    roots = {sysconfig.get_path(name) for name in ("stdlib", "purelib", "platlib")}
    roots |= {p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")}
    return filename.startswith("<") or any(filename.startswith(root) for root in roots if root)


def _in_harness(filename: str) -> bool:
    return Path(filename).is_relative_to(HARNESS)


def _submission_root(module: ModuleType) -> Path | None:
    """The folder paths are shown from: the one holding `tests/adapters.py`'s `tests`, or
    else the adapters module's own."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        return None
    folder = Path(file).parent
    return folder.parent if folder.name == "tests" else folder


def _place(frame: FrameType, lineno: int, root: Path | None) -> str:
    path = Path(frame.f_code.co_filename)
    shown = path.relative_to(root).as_posix() if root and path.is_relative_to(root) else path
    return f"`{frame.f_code.co_qualname}` in {shown}:{lineno}"


def where_raised(error: BaseException, module: ModuleType, adapters: Iterable[str]) -> str | None:
    """Where `error`, caught around a call of the adapters named `adapters` of `module`, was
    raised, as the text after the arrow above; None where the plain line says it all: an
    adapter's own body raised it, or the harness (a missing adapter, `probes.registry.adapter`)."""
    # Under the grader this runs among the submission's objects (its module's __getattr__,
    # a function without code): none of them may turn a "not implemented" into a crash.
    with contextlib.suppress(Exception):
        return _where(error, module, adapters)
    return None


def _where(error: BaseException, module: ModuleType, adapters: Iterable[str]) -> str | None:
    frames = list(traceback.walk_tb(error.__traceback__))
    if not frames:
        return None
    raiser, lineno = frames[-1]
    own = {
        getattr(inspect.unwrap(function), "__code__", None)
        for function in (getattr(module, name, None) for name in adapters)
        if callable(function)
    }
    filename = raiser.f_code.co_filename
    if raiser.f_code in own or _in_harness(filename):
        return None
    root = _submission_root(module)
    if not in_library(filename):
        return f"{_place(raiser, lineno, root)} {RAISED}"
    library = str(raiser.f_globals.get("__name__", "")).partition(".")[0] or "a library"
    where = f"`{raiser.f_code.co_qualname}` in {library} {RAISED}"
    callers = [
        (frame, line)
        for frame, line in frames
        if not in_library(frame.f_code.co_filename) and not _in_harness(frame.f_code.co_filename)
    ]
    if callers:
        where += f", called from {_place(*callers[-1], root)}"
    return where


def message(needs: str, where: object = None) -> str:
    """`not implemented: <needs>`, and ` → <where>` when there is a location (a string: under
    the grader the worker sends it, and may send anything), cut and cleaned to one line."""
    line = f"not implemented: {needs}"
    if isinstance(where, str) and where:
        line += f" → {clean(where, WHERE_CHARS)}"
    return line
