"""AdamW with β1 and β2 swapped: m decays with betas[1], v with betas[0]."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_betas_swapped"


def get_adamw_cls():
    return adamw_with("betas_swapped")
