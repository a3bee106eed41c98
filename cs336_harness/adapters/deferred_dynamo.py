"""torch.optim's guard against `torch.compile`, deferred until torch._dynamo is imported.

`Optimizer.add_param_group`, `zero_grad`, `state_dict` and `load_state_dict` are wrapped by
`torch._disable_dynamo`, which imports torch._dynamo on the first call (1.2 to 1.7 s of CPU)
only to tell the compiler not to trace them. Nothing can be compiling before torch._dynamo
is imported, so until then each wrapper is told to call its function directly; the moment
torch._dynamo's import begins, that is taken back, and torch builds its guards as it would
have. A student's AdamW subclasses `torch.optim.Optimizer`: without this, every process
that runs one pays that import.

Nothing stands between the wrapper and its function: the rules' watcher
(`cs336_harness/rules/runtime.py`) sees the same PyTorch frames as without it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch.optim

# How torch (2.6 to 2.15, `torch/_compile.py`) names the wrapper, and the attribute of the
# function it guards where it keeps the guarded call it built on the first call.
_WRAPPER = "_disable_dynamo.<locals>.inner"
_CACHE = "__dynamo_disable"


def install(cls: type = torch.optim.Optimizer) -> int:
    """Defer the guard of every method of `cls` that has one not yet built; how many were
    deferred. Once torch._dynamo is imported there is nothing to save, and a torch whose
    wrapper looks otherwise is left as it is (correct, and only slower)."""
    if "torch._dynamo" in sys.modules:
        return 0
    deferred = []
    for wrapper in vars(cls).values():
        fn = _guarded(wrapper)
        if fn is not None and getattr(fn, _CACHE, None) is None:
            setattr(fn, _CACHE, fn)  # the wrapper calls what it finds here
            deferred.append(fn)
    if deferred:
        sys.meta_path.insert(0, _GuardsBack(deferred))
    return len(deferred)


def _guarded(wrapper: Any) -> Callable[..., Any] | None:
    """The function `wrapper` guards, when it is torch's guard."""
    code = getattr(wrapper, "__code__", None)
    if code is None or getattr(code, "co_qualname", "") != _WRAPPER or not wrapper.__closure__:
        return None
    cells = dict(zip(code.co_freevars, wrapper.__closure__, strict=True))
    return cells["fn"].cell_contents if "fn" in cells else None


class _GuardsBack:
    """An import finder that finds nothing: when torch._dynamo's import begins, it takes
    the deferral back (each wrapper then builds torch's guard on its next call) and leaves
    `sys.meta_path`."""

    def __init__(self, deferred: list[Callable[..., Any]]):
        self.deferred = deferred

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "torch._dynamo":
            for fn in self.deferred:
                if getattr(fn, _CACHE, None) is fn:
                    delattr(fn, _CACHE)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
