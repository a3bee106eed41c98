"""A language model whose blocks each read the embeddings (h = layer(x) in the loop), so the
last block alone reaches the head."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

CAUGHT_BY = frozenset({"transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "lm_blocks_not_chained"
_adapters = AssembledAdapters(Assembly(chained=False))
run_transformer_lm = _adapters.run_transformer_lm
