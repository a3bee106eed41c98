"""A language model that applies ln_final twice before the head."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_final_norm_twice"
_adapters = AssembledAdapters(Assembly(final_norms=2))
run_transformer_lm = _adapters.run_transformer_lm
