"""AdamW whose first moment is m ← β1·m + g, without the (1 − β1)."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_first_moment_without_one_minus_beta1"


def get_adamw_cls():
    return adamw_with("first_moment_sum")
