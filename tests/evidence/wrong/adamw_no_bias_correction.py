"""AdamW without the bias correction of the moments."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_without_bias_correction"


def get_adamw_cls():
    return adamw_with("no_bias_correction")
