"""A post-norm block, h = ln1(x + attn(x)), where SPEC's default is pre-norm."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"transformer_block"})
DIAGNOSED_AS = "block_post_norm"
_adapters = MistakenAdapters(Mistakes(post_norm=True))
run_transformer_block = _adapters.run_transformer_block
