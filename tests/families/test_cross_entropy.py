"""Cross-entropy: the mean of log Σ exp(logits) − logits[target] over every position."""

import pytest

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from cs336_harness.tolerances import CROSS_ENTROPY_PER_UNIT_LOGIT
from tests.families.gradients import assert_input_gradients

FAMILY = family("cross_entropy")

pytestmark = pytest.mark.family("cross_entropy")


def test_cross_entropy(case, adapters):
    logits = case["inputs"]
    loss = adapters.run_cross_entropy(logits, case["targets"])  # positionally, as upstream
    atol = FAMILY.tolerance["atol"] + CROSS_ENTROPY_PER_UNIT_LOGIT * float(logits.abs().max())
    assert_matches_oracle(
        loss, case.expected, dtype=logits.dtype, rtol=FAMILY.tolerance["rtol"], atol=atol,
        what="the loss",
    )  # fmt: skip


@pytest.mark.family("cross_entropy", cases="backward")
def test_cross_entropy_backward(case, adapters):
    kwargs = {"inputs": case["inputs"], "targets": case["targets"]}
    assert_input_gradients(
        adapters, case, "run_cross_entropy", kwargs, FAMILY.backward, positional=2
    )
