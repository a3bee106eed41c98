"""AdamW that steps every parameter group with the constructor's hyperparameters."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_ignores_param_groups"


def get_adamw_cls():
    return adamw_with("group_defaults")
