"""The probes' registry: `@probe` registers a check of adapters that take or return objects,
and `run_probe` runs one against an adapters module (docs/architecture.md, "Probes")."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from cs336_harness.rules.runtime import handing_over

# The modules of this package that register probes, by subject.
SUBJECTS = ("gradients", "training", "checkpoint", "tokenizer", "modules")


class MissingAdapter(NotImplementedError):
    """The adapters module has no such function (reported as "not implemented")."""


# name -> (the probe, the adapters it needs: named in a "not implemented" message)
PROBES: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {}


def adapter(module: ModuleType, name: str) -> Callable[..., Any]:
    """The adapter `name` of `module`, for a probe to call: what it returns goes to the
    harness's objects, which the rules' watcher is told of (`handing_over`)."""
    function = getattr(module, name, None)
    if not callable(function):
        raise MissingAdapter(name)
    return handing_over(function)


def probe(*needs: str) -> Callable[[Callable[..., Any]], Any]:
    """Register a probe of the adapters `needs`; the decorated name takes `adapters` first,
    and its `measured` returns the probe's value with the CPU seconds its call took
    (`adapters.measured`)."""

    def register(function: Callable[..., Any]) -> Any:
        PROBES[function.__name__] = (function, needs)

        @functools.wraps(function)
        def run(adapters: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return adapters.probe(function.__name__, kwargs)

        def measured(adapters: Any, **kwargs: Any) -> tuple[Any, float]:
            __tracebackhide__ = True
            return adapters.measured(function.__name__, kwargs)

        run.measured = measured  # type: ignore[attr-defined]
        return run

    return register


def registered() -> dict[str, tuple[Callable[..., Any], tuple[str, ...]]]:
    """Every probe, each subject's module imported (and so registered) first."""
    for subject in SUBJECTS:
        importlib.import_module(f"{__package__}.{subject}")
    return PROBES


def run_probe(module: ModuleType, name: str, kwargs: dict[str, Any]) -> Any:
    """Run probe `name` against `module`, in this process."""
    function, _ = registered()[name]
    return function(module, **kwargs)


def needs_of(name: str) -> tuple[str, ...]:
    probes = registered()
    return probes[name][1] if name in probes else (name,)
