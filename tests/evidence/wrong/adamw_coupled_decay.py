"""Adam with L2 regularisation (λθ added to the gradient) instead of decoupled decay."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_coupled_weight_decay"


def get_adamw_cls():
    return adamw_with("coupled_decay")
