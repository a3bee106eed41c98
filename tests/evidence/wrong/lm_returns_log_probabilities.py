"""A language model that returns log-softmax instead of the logits."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_returns_log_probabilities"
_adapters = AssembledAdapters(Assembly(output="log_probabilities"))
run_transformer_lm = _adapters.run_transformer_lm
