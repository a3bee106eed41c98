"""The catalog of known mistakes: for each, what an implementation making it outputs.

Each `Mistake` has an id, the one line a failing test opens with when its output matches
(`likely cause: <message>`), and per test family a *variant*: a function of the stored case
(NumPy, float64, built on the oracle) that returns the mistaken implementation's output on
that case's inputs, in the layout the family's test compares.

A variant returns None where the mistake cannot show on the case: Θ is already 10000, there
is no mask, the positions are already `0 … seq−1`, a single head, no value large enough to
overflow. Everywhere else it must differ from the truth by more than the test's tolerance
(the meta-test checks this on every stored case, and the seed sweep on fresh draws), so a
correct output is never diagnosed; only a `graded` mistake, whose effect shrinks with the
data, may stay within the tolerance on a case, where it cannot be seen. Every mistake is
proved by a wrong module in `tests/evidence/wrong/` that declares it in `DIAGNOSED_AS`.

One module per part of the assignment holds its mistakes, each written next to its variant:
`components`, `attention`, `model`, `training`, `bpe` (whose outputs are a trained model's
fingerprint, compared exactly); `reading` and `numerics` hold what they share,
`parts` the default model assembled from replaceable parts (a component's mistake made
wherever the component is used).

The catalog uses the oracle, so it is withheld from the grader's bundle and the handout like
the oracle itself; under the grader the judge reads its variants from a table the grader
writes beforehand (`diagnose.write_table`).
"""

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
