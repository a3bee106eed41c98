"""AdamW whose second moment averages g instead of g² (NaN once v turns negative)."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_second_moment_of_g"


def get_adamw_cls():
    return adamw_with("second_moment_plain")
