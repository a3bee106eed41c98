"""A language model that subtracts each position's largest logit before returning, "for
numerical stability": each row of logits off by its own constant. No catalogued mistake;
its failures open with that shape of error."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_transformer_lm as _correct_lm

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
ERROR_SHAPE = "row_offset"


def run_transformer_lm(**kwargs):
    logits = _correct_lm(**kwargs)
    return logits - logits.amax(-1, keepdim=True)
