"""A language model that runs range(num_layers - 1) blocks: the last layer never runs."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_drops_last_layer"
run_transformer_lm = PartsAdapters(Parts(layers=lambda n: range(n - 1))).run_transformer_lm
