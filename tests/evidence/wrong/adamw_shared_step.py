"""AdamW with one step count for the optimizer (advanced at every step()), not one per
parameter: a parameter that skipped steps gets the wrong bias correction."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_shared_step_count"


def get_adamw_cls():
    return adamw_with("shared_step")
