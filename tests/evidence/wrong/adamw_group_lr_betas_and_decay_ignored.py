"""AdamW that keeps lr, betas, weight_decay under keys of its own in `defaults` (as students'
`'beta1'`, `'ld'`, `'alpha'` do), so every param group is stepped with the constructor's,
whatever the group gives."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with

CAUGHT_BY = frozenset({"adamw"})
DIAGNOSED_AS = "adamw_group_lr_betas_and_decay_ignored"


def get_adamw_cls():
    return adamw_with(constructor_keys=("lr", "betas", "weight_decay"))
