"""A language model that multiplies the token embeddings by √d_model (as the original
Transformer does) before the first block."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_embeddings_scaled"
_adapters = AssembledAdapters(Assembly(embeddings_scaled=True))
run_transformer_lm = _adapters.run_transformer_lm
