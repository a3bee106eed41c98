"""RoPE that rotates by 0..seq-1 whatever token_positions says."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"rope"})
DIAGNOSED_AS = "rope_ignores_positions"
_adapters = MistakenAdapters(Mistakes(ignore_positions=True))
run_rope = _adapters.run_rope
