"""AdamW that applies weight decay to a parameter whose grad is None."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_decays_parameters_without_gradient"


def get_adamw_cls():
    return adamw_with("decay_without_grad")
