"""A tokenizer that ignores its special tokens: <|endoftext|> is encoded as plain text."""

from cs336_basics.tokenizer import Tokenizer
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"tokenizer"})


def get_tokenizer(vocab, merges, special_tokens=None):
    return Tokenizer(vocab, merges)
