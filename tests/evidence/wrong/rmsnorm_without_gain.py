"""RMSNorm without its gain (x / RMS(x) only) in every norm: the RMSNorm adapter, both norms
of the block and every norm of the model, ln_final included."""

import torch

from tests import adapters
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset(
    {"rmsnorm", "transformer_block", "transformer_lm", "transformer_lm_truncated_input"}
)
DIAGNOSED_AS = "rmsnorm_without_gain"


def _unit_gains(weights):
    """A norm without a gain computes what one with a gain of ones does."""
    return {
        name: torch.ones_like(w) if name.split(".")[-2].startswith("ln") else w
        for name, w in weights.items()
    }


def run_rmsnorm(**kwargs):
    return adapters.run_rmsnorm(**kwargs | {"weights": torch.ones_like(kwargs["weights"])})


def run_transformer_block(**kwargs):
    return adapters.run_transformer_block(**kwargs | {"weights": _unit_gains(kwargs["weights"])})


def run_transformer_lm(**kwargs):
    return adapters.run_transformer_lm(**kwargs | {"weights": _unit_gains(kwargs["weights"])})
