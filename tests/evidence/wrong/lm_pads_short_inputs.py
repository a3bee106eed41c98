"""A language model that left-pads short inputs to the full context with token 0: the
padding leaks into attention, so only inputs shorter than the context go wrong."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_pads_short_inputs"
_adapters = MistakenAdapters(Mistakes(pad_to_context=True))
run_transformer_lm = _adapters.run_transformer_lm
