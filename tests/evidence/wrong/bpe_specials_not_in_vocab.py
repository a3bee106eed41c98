"""BPE training that leaves the special tokens out of the vocabulary."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._bpe_mistakes import train_with

CAUGHT_BY = frozenset({"train_bpe"})
DIAGNOSED_AS = "bpe_special_tokens_not_in_vocab"


def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
    return train_with(input_path, vocab_size, special_tokens, "specials_not_in_vocab")
