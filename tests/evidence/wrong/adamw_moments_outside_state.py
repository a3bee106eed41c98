"""AdamW that keeps each parameter's step count and moments in a dict attribute of its own,
not in `self.state`: every step is right, but `state_dict()` holds none of it, so a
checkpoint loses the moments and a resumed run starts them again from zero."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})


def get_adamw_cls():
    return adamw_with("moments_outside_state")
