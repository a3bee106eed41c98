"""The catalog of known mistakes: for each, its message and, per family, a *variant*, the
output an implementation making it computes on a stored case; one module per part of the
assignment (docs/maintaining.md, "The catalog of known mistakes")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

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


# A model deeper than this stacks a mistake's rounding through enough layers that where its
# softmaxes nearly tie, a float32 model making it parts from the float64 variant by more
# than the tolerance: its variants are conditioned (`_stable`).
DEEP = 10
# The relative jitter of the token embeddings that stands for float32's rounding a few times
# over (as attention's `FLOAT32_JITTER`), and how far it may move an element, relative and
# absolute near 0, for the element to stay in the fingerprint: half the LM's tolerance.
EMBEDDING_JITTER = 1e-6
UNSTABLE = 1.5e-5


def _jittered(case: NumpyCase) -> NumpyCase:
    name = "token_embeddings.weight"
    table = case.weights[name]
    noise = np.random.default_rng(0).standard_normal(table.shape)  # fixed: one answer a case
    return replace(case, weights=case.weights | {name: table * (1.0 + EMBEDDING_JITTER * noise)})


def _stable(value: np.ndarray, moved: np.ndarray | None) -> np.ndarray | None:
    """`value` with the elements the jitter moved by more than UNSTABLE masked; None where
    that is every element."""
    if moved is None:
        return value
    unstable = np.abs(np.ma.getdata(moved) - np.ma.getdata(value)) > UNSTABLE * (
        1.0 + np.abs(np.ma.getdata(value))
    )
    unstable |= np.ma.getmaskarray(value)
    if unstable.all():
        return None
    return np.ma.masked_array(np.ma.getdata(value), unstable) if unstable.any() else value


def variants(case: NumpyCase) -> Iterator[tuple[str, np.ndarray]]:
    """Each catalogued mistake's output on `case`, with its id (the mistakes that can show
    there). One at a time: a language model's outputs are 5 MB each, some 80 of them, and a
    table is written from a fingerprint of each."""
    deep = case.params.get("num_layers", 0) > DEEP and "token_embeddings.weight" in case.weights
    jittered = _jittered(case) if deep else None
    for mistake in MISTAKES:
        variant = mistake.variants.get(case.family)
        if variant is not None and (value := variant(case)) is not None:
            if jittered is not None and (value := _stable(value, variant(jittered))) is None:
                continue
            # A masked array keeps its mask: elements the mistake's own output cannot vouch for.
            yield mistake.id, np.asanyarray(value, dtype=np.float64)
