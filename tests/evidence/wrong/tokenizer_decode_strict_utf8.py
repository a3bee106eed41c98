"""A tokenizer whose decode raises on invalid UTF-8 instead of writing U+FFFD."""

from cs336_basics.tokenizer import Tokenizer
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"tokenizer"})


class StrictTokenizer(Tokenizer):
    def decode(self, ids):
        return b"".join(self.vocab[i] for i in ids).decode("utf-8")


def get_tokenizer(vocab, merges, special_tokens=None):
    return StrictTokenizer(vocab, merges, special_tokens)
