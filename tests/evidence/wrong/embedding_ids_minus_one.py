"""An embedding that looks up weight[token_ids - 1], as if ids counted from 1 (id 0 reads
the last row), in the embedding and in the model."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset({"embedding", "transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "embedding_ids_minus_one"


def _embed(table, ids):
    return table[ids - 1]


_adapters = PartsAdapters(Parts(embed=_embed))
run_embedding = _adapters.run_embedding
run_transformer_lm = _adapters.run_transformer_lm
