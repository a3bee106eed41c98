"""RoPE pairing x[k] with x[k + d_k/2] ("rotate half", LLaMA-family code) instead of
adjacent pairs."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

CAUGHT_BY = frozenset({"rope"})
DIAGNOSED_AS = "rope_rotate_half"
_adapters = MistakenAdapters(Mistakes(rope_pairing="half"))
run_rope = _adapters.run_rope
