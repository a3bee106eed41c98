"""BPE training that breaks count ties toward the lexicographically smaller pair."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._bpe_mistakes import train_with

CAUGHT_BY = frozenset({"train_bpe"})
DIAGNOSED_AS = "bpe_ties_to_lesser_pair"


def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
    return train_with(input_path, vocab_size, special_tokens, "ties_to_lesser")
