"""The cosine schedule: linear warm-up, a half cosine from max to min, then min."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle

FAMILY = family("learning_rate_schedule")

pytestmark = pytest.mark.family("learning_rate_schedule")


def test_learning_rate_schedule(case, adapters):
    rates = []
    for it in case["its"].tolist():
        rate = adapters.run_get_lr_cosine_schedule(it=it, **case.params)
        assert isinstance(rate, int | float | torch.Tensor) and not isinstance(rate, bool), (
            f"it={it}: expected a number, got {type(rate).__name__}"
        )
        rates.append(float(rate))
    assert_matches_oracle(
        torch.tensor(rates, dtype=torch.float64), case.expected, dtype=torch.float64,
        **FAMILY.tolerance, what=f"the learning rates at it = {case['its'].tolist()}",
    )  # fmt: skip
