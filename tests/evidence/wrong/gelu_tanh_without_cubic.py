"""GELU's tanh form without its cubic term, 0.5 x (1 + tanh(√(2/π) x)); the exact form is
right."""

import math

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.adapters import run_gelu as _correct_gelu

CAUGHT_BY = frozenset({"gelu"})
DIAGNOSED_AS = "gelu_tanh_without_cubic_term"


def run_gelu(in_features, approximate="none"):
    if approximate != "tanh":
        return _correct_gelu(in_features, approximate)
    return 0.5 * in_features * (1 + torch.tanh(math.sqrt(2 / math.pi) * in_features))
