"""RoPE turning each pair the wrong way, (a cos + b sin, −a sin + b cos). Only RoPE's own
output is checked here: in attention it is indistinguishable from cos and sin swapped."""

from functools import partial

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters, rope

CAUGHT_BY = frozenset({"rope"})
DIAGNOSED_AS = "rope_rotation_reversed"
run_rope = PartsAdapters(Parts(rope=partial(rope, reverse=True))).run_rope
