"""RoPE counting positions from 1: position p turns by the angle of p + 1. Attention, which
sees only differences of positions, cannot tell; RoPE's output can."""

from functools import partial

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import Parts, PartsAdapters, rope

CAUGHT_BY = frozenset({"rope"})
DIAGNOSED_AS = "rope_positions_from_one"
run_rope = PartsAdapters(Parts(rope=partial(rope, shift=1))).run_rope
