"""An embedding lookup multiplied by √d_model, as "Attention Is All You Need" scales its
embeddings; the assignment's Embedding returns the table's rows as they are."""

import math

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_embedding as _correct_embedding

CAUGHT_BY = frozenset({"embedding"})
DIAGNOSED_AS = "lm_embeddings_scaled"


def run_embedding(vocab_size, d_model, weights, token_ids):
    return _correct_embedding(vocab_size, d_model, weights, token_ids) * math.sqrt(d_model)
