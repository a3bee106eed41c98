"""A block that uses ln1's gain for both of its norms."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"transformer_block"})
DIAGNOSED_AS = "block_norms_share_a_gain"
_adapters = MistakenAdapters(Mistakes(shared_block_norm=True))
run_transformer_block = _adapters.run_transformer_block
