"""generation that runs to max_new_tokens even after emitting end-of-text."""

from tests import adapters
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"decoding"})


def run_generate(**kwargs):
    return adapters.run_generate(**(kwargs | {"end_of_text_id": None}))
