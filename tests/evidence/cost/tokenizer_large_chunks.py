"""A tokenizer whose encode_iterable encodes chunks of 200,000 characters: a constant buffer
larger than the first round's streams, which upstream's 1 MB allows and the second round
measures."""

from tests.adapters import *  # noqa: F403
from tests.evidence.cost._tokenizers import LargeChunks

CAUGHT_BY = frozenset(())
NAMED = ""


def get_tokenizer(vocab, merges, special_tokens=None):
    return LargeChunks(vocab, merges, special_tokens)
