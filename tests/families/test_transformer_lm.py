"""The whole Transformer LM: logits for a full context, and an error past it."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle
from cs336_harness.judging.diagnosis.first_difference import in_transformer_lm, reported_on_failure
from tests.families import costs
from tests.families.lm_call import run_lm

FAMILY = family("transformer_lm")

pytestmark = pytest.mark.family("transformer_lm")


def test_transformer_lm(case, adapters):
    out = run_lm(adapters, case, case["in_indices"])
    # On a failure, also say which sublayer of get_transformer_lm's model first differs.
    with reported_on_failure(lambda: in_transformer_lm(adapters, case, **FAMILY.tolerance)):
        assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.hardening("upstream leaves a sequence past context_length undefined")
@pytest.mark.trivial("an adapter that always raises passes")
def test_transformer_lm_rejects_sequences_past_the_context(case, adapters):
    ids = case["in_indices"]
    too_long = torch.cat([ids, ids[:, :1]], dim=-1)
    assert too_long.shape[-1] == case.params["context_length"] + 1
    with pytest.raises(Exception):  # noqa: B017 (SPEC asks for a clear error, of no fixed type)
        run_lm(adapters, case, too_long)


@pytest.mark.efficiency
@pytest.mark.hardening(costs.HARDENING)
@pytest.mark.trivial(costs.TRIVIAL)
def test_transformer_lm_cost(adapters, request):
    costs.check_cost("transformer_lm", adapters, request)
