"""A language model that returns softmax probabilities instead of logits."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_returns_probabilities"
_adapters = AssembledAdapters(Assembly(output="probabilities"))
run_transformer_lm = _adapters.run_transformer_lm
