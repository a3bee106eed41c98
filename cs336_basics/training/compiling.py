"""`compile` in a training config (`cs336-train --compile`): which ``torch.compile`` backend
the model gets on its device, and the compiled model.

``True`` chooses as upstream's handout advises: torch's default, Inductor, on CUDA; on the
CPU Inductor too, which builds its kernels with a C++ compiler, where one is found (else
``aot_eager``, which traces the same graphs and runs them with torch's own kernels); and
``aot_eager`` on Apple silicon (``mps``), where the handout names it. A string names the
backend itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator

import torch
from torch import Tensor

from cs336_basics.transformer_lm import TransformerLM


def cxx_found() -> bool:
    """Whether the C++ compiler Inductor builds CPU kernels with is on the PATH: ``$CXX``,
    else ``g++`` (``clang++`` on macOS), as its config chooses."""
    default = "clang++" if sys.platform == "darwin" else "g++"
    return shutil.which(os.environ.get("CXX") or default) is not None


def compile_backend(setting: bool | str, device: torch.device) -> str | None:
    """The backend `setting` (a config's `compile`) gives on `device`; None: not compiled."""
    if setting is False:
        return None
    if isinstance(setting, str):
        return setting
    if device.type == "mps":
        return "aot_eager"
    if device.type == "cpu" and not cxx_found():
        return "aot_eager"
    return "inductor"


def compiled(model: TransformerLM, backend: str) -> Callable[[Tensor], Tensor]:
    """`model`'s forward compiled with `backend`: the same parameters, so the optimizer,
    checkpoints and evaluation keep using `model` itself. Compiles on its first call; an
    unknown backend is a ValueError naming it."""
    try:
        return torch.compile(model, backend=backend)
    except RuntimeError as error:  # torch._dynamo's InvalidBackend
        raise ValueError(f"compile={backend!r}: {error}") from None


@contextlib.contextmanager
def quiet_complex_fallback() -> Iterator[None]:
    """Inductor says nothing of RoPE's complex multiply in this context: it generates no code
    for complex numbers and runs that one op with torch's own kernel, as eager mode does,
    which is all its warning ("performance may be worse than eager") means here."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Torchinductor does not support code generation for complex"
        )
        yield
