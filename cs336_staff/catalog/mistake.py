"""One known mistake: its id, the line that names it, and its output per test family."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from cs336_harness.judging.diagnosis.numpy_cases import NumpyCase

Variant = Callable[[NumpyCase], np.ndarray | None]


@dataclass(frozen=True)
class Mistake:
    """`graded`: the mistake's effect shrinks with the data (eps against the mean square,
    tanh against erf far from 0), so on some cases its output is within the tolerance of the
    correct one: it cannot be seen there, and the check that no mistake matches a correct
    output exempts it there."""

    id: str
    message: str
    variants: Mapping[str, Variant]
    graded: bool = False

    @property
    def line(self) -> str:
        return f"likely cause: {self.message}"
