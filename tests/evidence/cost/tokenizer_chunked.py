"""A tokenizer whose encode_iterable encodes chunks of 64 Ki characters: a constant buffer,
which streams."""

from tests.adapters import *  # noqa: F403
from tests.evidence.cost._tokenizers import Chunked

CAUGHT_BY = frozenset(())
NAMED = ""


def get_tokenizer(vocab, merges, special_tokens=None):
    return Chunked(vocab, merges, special_tokens)
