"""AdamW decaying by θ ← θ − λθ, without the learning rate."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_decay_without_lr"


def get_adamw_cls():
    return adamw_with("decay_without_lr")
