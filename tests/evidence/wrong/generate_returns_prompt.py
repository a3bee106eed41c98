"""generation that returns the prompt followed by the new tokens."""

import torch

from tests import adapters
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"decoding"})


def run_generate(**kwargs):
    return torch.cat([kwargs["prompt"], adapters.run_generate(**kwargs)])
