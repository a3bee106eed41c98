"""AdamW that bias-corrects m but not v: lr·m̂/(√v + ε)."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_second_moment_uncorrected"


def get_adamw_cls():
    return adamw_with("first_moment_only_corrected")
