"""A tokenizer whose encode_iterable yields each line's ids as they come but also keeps them
all: it streams, and still grows with the stream."""

from tests.adapters import *  # noqa: F403
from tests.evidence.cost._tokenizers import KeepsHistory

CAUGHT_BY = frozenset({"tokenizer"})
NAMED = "keeps every id"


def get_tokenizer(vocab, merges, special_tokens=None):
    return KeepsHistory(vocab, merges, special_tokens)
