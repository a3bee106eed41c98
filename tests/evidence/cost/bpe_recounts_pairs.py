"""The toy trainer upstream's speed test is placed against: correct merges, but every pair of
every word is counted again after each merge (the wrong modules' naive trainer, no mistake
switched on)."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._bpe_mistakes import train_with

CAUGHT_BY = frozenset({"train_bpe"})
NAMED = "recounts every pair"


def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
    return train_with(input_path, vocab_size, special_tokens)
