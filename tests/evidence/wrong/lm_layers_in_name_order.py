"""The model runs its layers in the order of their names as strings (layers.0, layers.1,
layers.10, layers.11, layers.2, …), as a loop over sorted weight keys does: the index's order
up to 10 layers, another past it."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_layers_in_name_order"
run_transformer_lm = PartsAdapters(
    Parts(layers=lambda n: sorted(range(n), key=str))
).run_transformer_lm
