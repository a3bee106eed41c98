"""The catalog of known mistakes: for each, its message and, per family, a *variant*, the
output an implementation making it computes on a stored case; one module per part of the
assignment (docs/maintaining.md, "The catalog of known mistakes")."""

from __future__ import annotations

import numpy as np

from cs336_harness.judging.diagnosis.numpy_cases import NumpyCase
from cs336_staff.catalog import attention, bpe, components, model, training
from cs336_staff.catalog.mistake import Mistake
from cs336_staff.catalog.numerics import round_to_bfloat16
from cs336_staff.catalog.reading import oracle_config

__all__ = ["BY_ID", "MISTAKES", "Mistake", "oracle_config", "round_to_bfloat16", "variants"]

MISTAKES: tuple[Mistake, ...] = (
    *components.MISTAKES,
    *attention.MISTAKES,
    *model.MISTAKES,
    *training.MISTAKES,
    *bpe.MISTAKES,
)

BY_ID: dict[str, Mistake] = {m.id: m for m in MISTAKES}
if len(BY_ID) != len(MISTAKES):
    raise ValueError("duplicate mistake ids in the catalog")


def variants(case: NumpyCase) -> dict[str, np.ndarray]:
    """Every catalogued mistake's output on `case` (ids of the mistakes that can show there)."""
    out = {}
    for mistake in MISTAKES:
        variant = mistake.variants.get(case.family)
        if variant is not None and (value := variant(case)) is not None:
            # A masked array keeps its mask: elements the mistake's own output cannot vouch for.
            out[mistake.id] = np.asanyarray(value, dtype=np.float64)
    return out
