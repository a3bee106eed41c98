"""AdamW whose step count starts at 1 and is incremented before use: t = 2 at the first step."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_step_count_ahead"


def get_adamw_cls():
    return adamw_with("step_count_ahead")
