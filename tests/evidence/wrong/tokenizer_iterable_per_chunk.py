"""A tokenizer whose encode_iterable encodes each string alone, so a pre-token that spans two
strings (a blank line's newlines, spaces before a word) is split."""

from cs336_basics.tokenizer import Tokenizer
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"tokenizer"})


class PerChunkTokenizer(Tokenizer):
    def encode_iterable(self, iterable):
        for text in iterable:
            yield from self.encode(text)


def get_tokenizer(vocab, merges, special_tokens=None):
    return PerChunkTokenizer(vocab, merges, special_tokens)
