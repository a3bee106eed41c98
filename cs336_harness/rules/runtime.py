"""The forbidden definitions a submission actually called, seen while its code runs by a
`TorchFunctionMode`: evidence it could hide, not proof (docs/grading.md, "The assignment's
rules")."""

from __future__ import annotations

import inspect
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import BuiltinFunctionType, CodeType, FrameType, ModuleType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from cs336_harness.rules.policy import DEFAULT, Policy
from cs336_harness.rules.static_scan import SCANNED

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# Distinct (name, file, line) kept between two `take`s, and how many one `take` hands on:
# a submission generating code could call from any number of lines.
MAX_SITES = 1000
TAKEN = 32
# A code object's place: PyTorch's, the submission's, or anyone else's.
_TORCH, _OWN, _OTHER = 0, 1, 2
# `Module.__call__`'s implementation: what it runs is the module's forward.
MODULE_CALL = ("_wrapped_call_impl", "_call_impl")


def _modules(namespaces: tuple[str, ...]) -> Iterator[ModuleType]:
    """The imported modules within `namespaces`, the shortest names first (breadth first)."""
    within = tuple(n + "." for n in namespaces)
    queue = [sys.modules[n] for n in namespaces if n in sys.modules]
    seen = {id(m) for m in queue}
    while queue:
        module = queue.pop(0)
        yield module
        for value in list(vars(module).values()):
            if (
                isinstance(value, ModuleType)
                and id(value) not in seen
                and value.__name__.startswith(within)
            ):
                seen.add(id(value))
                queue.append(value)


def _own(value: Any, namespaces: tuple[str, ...]) -> bool:
    """Whether `value` belongs to `namespaces`: defined in one of them, or a kernel that they
    export and `torch` does not (`F.linear` is `torch._C._nn.linear`; `F.conv2d` is
    `torch.conv2d`, which the assignment allows)."""
    home = str(getattr(value, "__module__", None) or "")
    if home in namespaces or home.startswith(tuple(n + "." for n in namespaces)):
        return True
    kernel = isinstance(value, BuiltinFunctionType) and home.startswith("torch.")
    return kernel and getattr(torch, value.__name__, None) is not value


def public_names(namespaces: tuple[str, ...]) -> dict[int, tuple[str, Any]]:
    """id → (public name, object) of every class and function of `namespaces`' own (`_own`),
    by its shortest spelling."""
    index: dict[int, tuple[str, Any]] = {}
    for module in _modules(namespaces):
        for name, value in list(vars(module).items()):
            if (
                callable(value)
                and not isinstance(value, ModuleType)
                and id(value) not in index
                and _own(value, namespaces)
            ):
                index[id(value)] = (f"{module.__name__}.{name}", value)
    return index


def _unwrapped_code(value: Any) -> CodeType | None:
    try:
        code = getattr(inspect.unwrap(value), "__code__", None)
    except ValueError:  # a cycle of `__wrapped__`
        return None
    return code if isinstance(code, CodeType) else None


class Watcher(TorchFunctionMode):
    """Counts the forbidden definitions called from the submission's frames while entered.

    `root` is the submission's folder and `adapters` its adapters file: frames of
    `root/cs336_basics/` and of `adapters` are the submission's (what the static scan reads),
    or with `whole` every frame under `root` (the worker's copy, which holds nothing else),
    and each site is named by its path relative to `root`.
    """

    def __init__(self, root: Path, adapters: Path, policy: Policy = DEFAULT, whole: bool = False):
        super().__init__()
        self.root = str(root)
        self.package = os.path.join(self.root, "" if whole else SCANNED[0], "")
        self.adapters = str(adapters)
        self.policy = policy
        self.sites: Counter[tuple[str, str, int]] = Counter()
        # Each file's path as a site names it: `relpath` costs microseconds, and a submission
        # may make a forbidden call in every step of a timed loop.
        self._paths: dict[str, str] = {}
        index = public_names(policy.forbidden)
        self._names = {id(v): name for name, v in index.values()}
        self._keep = [v for _, v in index.values()]  # ids stay theirs while indexed
        self._codes = {
            code: name for name, v in index.values() if (code := _unwrapped_code(v)) is not None
        }
        self._places: dict[CodeType, int] = {}
        self._by_func: dict[Any, str | None] = {}
        self._by_code: dict[CodeType, str | None] = {}
        self._by_method: dict[tuple[CodeType, type], str | None] = {}

    # -- where a frame is -------------------------------------------------------------------

    def _place(self, code: CodeType) -> int:
        place = self._places.get(code)
        if place is None:
            file = code.co_filename
            if file.startswith(TORCH_DIR):
                place = _TORCH
            elif file == self.adapters or file.startswith(self.package):
                place = _OWN
            else:
                place = _OTHER
            self._places[code] = place
        return place

    # -- what was entered -------------------------------------------------------------------

    def _forbidden(self, name: str | None) -> str | None:
        return name if name is not None and self.policy.forbids(name) else None

    def _function(self, func: Any) -> str | None:
        """The forbidden name of a torch function called directly, or None."""
        try:
            return self._by_func[func]
        except KeyError:
            pass
        except TypeError:  # unhashable: judged every time
            return self._forbidden(self._names.get(id(func)))
        name = self._names.get(id(func))
        if name is None:
            module, qualname = getattr(func, "__module__", None), getattr(func, "__qualname__", "")
            name = f"{module}.{qualname}" if isinstance(module, str) and qualname else None
        self._by_func[func] = self._forbidden(name)
        return self._by_func[func]

    def _class_name(self, cls: type) -> str:
        return self._names.get(id(cls)) or f"{cls.__module__}.{cls.__qualname__}"

    def _method(self, owner: type, code: CodeType, this: object) -> str | None:
        """The forbidden name of the method `code` of class `owner` run on `this` (None: a
        static or class method), or None. Whether it is forbidden is `owner`'s to say:
        `Optimizer.state_dict` is allowed on a `torch.optim.AdamW` the harness handed over,
        while `Module.__call__` runs the forward of `this`'s class. It is named by the most
        specific public class of `this` that has it (`AdamW` running `Adam.step`)."""
        cls = type(this)
        key = (code, cls)
        if key not in self._by_method:
            if this is not None and owner is torch.nn.Module and code.co_name in MODULE_CALL:
                owner = next(c for c in cls.__mro__ if "forward" in vars(c))
            name = None
            if self.policy.forbids(self._class_name(owner)):
                named = (c for c in cls.__mro__ if id(c) in self._names and issubclass(c, owner))
                name = self._class_name(next(named, owner))
            self._by_method[key] = name
        return self._by_method[key]

    def _code(self, frame: FrameType) -> str | None:
        """The forbidden name of the function a PyTorch frame runs, or None."""
        code = frame.f_code
        if code not in self._by_code:
            name = self._codes.get(code)
            if name is None:  # a definition no public name reaches
                name = f"{frame.f_globals.get('__name__', '')}.{code.co_qualname}"
            self._by_code[code] = self._forbidden(name)
        return self._by_code[code]

    def _entered(self, frames: list[FrameType], func: Any) -> str | None:
        """What the submission entered, from the PyTorch frames below its own (outermost
        first), else the function it called."""
        for frame in frames:
            code = frame.f_code
            if "<locals>" in code.co_qualname:
                continue
            head, dot, _ = code.co_qualname.partition(".")
            owner = frame.f_globals.get(head) if dot else None
            if isinstance(owner, type):
                has_self = code.co_argcount and code.co_varnames[0] == "self"
                return self._method(owner, code, frame.f_locals.get("self") if has_self else None)
            return self._code(frame)
        return self._function(func)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        frame = sys._getframe(1)
        place = self._place(frame.f_code)
        below: list[FrameType] = []
        while place == _TORCH and frame.f_back is not None:
            below.append(frame)
            frame = frame.f_back
            place = self._place(frame.f_code)
        if place == _OWN:
            name = self._entered(below[::-1], func)
            if name is not None:
                self._record(name, frame.f_code.co_filename, frame.f_lineno)
        return func(*args, **(kwargs or {}))

    # -- the record -------------------------------------------------------------------------

    def _record(self, name: str, file: str, line: int) -> None:
        path = self._paths.get(file)
        if path is None:
            path = self._paths[file] = os.path.relpath(file, self.root)
        key = (name, path, line)
        if key in self.sites or len(self.sites) < MAX_SITES:
            self.sites[key] += 1

    def handed(self, function: Any, value: Any) -> None:
        """`value` was returned by the submission's `function` to the harness: a forbidden
        class or function is recorded at `function`'s definition."""
        name = self._forbidden(self._names.get(id(value)))
        code = _unwrapped_code(function)
        if name is not None and code is not None and self._place(code) == _OWN:
            self._record(name, code.co_filename, code.co_firstlineno)

    def take(self) -> list[list[Any]]:
        """The sites seen since the last `take`, the most called first, as plain data:
        `[name, path, line, count]`, at most TAKEN of them."""
        taken = [[n, p, line, c] for (n, p, line), c in self.sites.most_common(TAKEN)]
        self.sites.clear()
        return taken

    def __enter__(self) -> Watcher:
        _WATCHING.append(self)
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        _WATCHING.remove(self)
        super().__exit__(*exc)


_WATCHING: list[Watcher] = []


def handing_over(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (an adapter), whose return value the watcher entered, if any, is told of."""
    if not _WATCHING:
        return function
    watcher = _WATCHING[-1]

    def returning(*args: Any, **kwargs: Any) -> Any:
        value = function(*args, **kwargs)
        watcher.handed(function, value)
        return value

    return returning
