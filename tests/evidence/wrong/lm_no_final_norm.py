"""A language model that skips ln_final before the output head."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_without_final_norm"
_adapters = MistakenAdapters(Mistakes(final_norm=False))
run_transformer_lm = _adapters.run_transformer_lm
