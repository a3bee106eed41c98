"""A language model whose every block runs layers.0's weights (the layer index left out of
the weights' names); right with one layer only."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_every_layer_uses_first_weights"
run_transformer_lm = PartsAdapters(Parts(layers=lambda n: [0] * n)).run_transformer_lm
