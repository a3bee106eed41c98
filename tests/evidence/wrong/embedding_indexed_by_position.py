"""An embedding that looks up each token's position along the sequence instead of its id,
in the embedding and in the model."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters

CAUGHT_BY = frozenset({"embedding", "transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "embedding_indexed_by_position"


def _embed(table, ids):
    return table[torch.arange(ids.shape[-1]).expand(ids.shape)]


_adapters = PartsAdapters(Parts(embed=_embed))
run_embedding = _adapters.run_embedding
run_transformer_lm = _adapters.run_transformer_lm
