"""AdamW whose step size is lr·(1 − β1^t)/√(1 − β2^t), the bias correction upside down."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_bias_correction_inverted"


def get_adamw_cls():
    return adamw_with("bias_correction_inverted")
