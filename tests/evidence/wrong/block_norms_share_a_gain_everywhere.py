"""Blocks that use ln1's gain for both of their norms, alone and inside the model."""

from tests import adapters
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"transformer_block", "transformer_lm", "transformer_lm_truncated_input"})
DIAGNOSED_AS = "block_norms_share_a_gain"


def _shared(weights):
    """Each block's ln2 gain replaced by its ln1 gain."""
    return weights | {
        name: weights[name.replace("ln2.", "ln1.")] for name in weights if "ln2." in name
    }


def run_transformer_block(**kwargs):
    return adapters.run_transformer_block(**kwargs | {"weights": _shared(kwargs["weights"])})


def run_transformer_lm(**kwargs):
    return adapters.run_transformer_lm(**kwargs | {"weights": _shared(kwargs["weights"])})
