"""A language model that reads the output head from token_embeddings (tied) when the
weights give it its own lm_head."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_head_tied_to_embeddings"
_adapters = MistakenAdapters(Mistakes(tied_head=True))
run_transformer_lm = _adapters.run_transformer_lm
