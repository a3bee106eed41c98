"""The language model in every SPEC architecture variant, built from a model_config.json dict."""

import pytest
import torch

from cs336_harness.families import family
from cs336_harness.judging.compare import assert_matches_oracle

FAMILY = family("transformer_lm_from_config")

pytestmark = pytest.mark.family("transformer_lm_from_config")


def _run(adapters, case, in_indices):
    # A copy: an adapter that pops keys from its config must not change the next test's.
    return adapters.run_transformer_lm_from_config(
        config=dict(case.params["config"]), weights=case.weights, in_indices=in_indices
    )


def test_transformer_lm_from_config(case, adapters):
    out = _run(adapters, case, case["in_indices"])
    assert_matches_oracle(out, case.expected, dtype=torch.float32, **FAMILY.tolerance)


@pytest.mark.hardening("upstream leaves a sequence past context_length undefined")
@pytest.mark.trivial("an adapter that always raises passes")
def test_transformer_lm_from_config_rejects_sequences_past_the_context(case, adapters):
    ids = case["in_indices"]
    too_long = torch.zeros(ids.shape[0], case.params["config"]["context_length"] + 1).to(ids)
    with pytest.raises(Exception):  # noqa: B017 (SPEC asks for a clear error, of no fixed type)
        _run(adapters, case, too_long)
