"""AdamW that adds its update to the parameters: gradient ascent."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_update_added"


def get_adamw_cls():
    return adamw_with("update_added")
