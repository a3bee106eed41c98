"""A tokenizer whose encode_iterable encodes line by line but returns a list of every id at the
end: the input streams, the output does not."""

from tests.adapters import *  # noqa: F403
from tests.evidence.cost._tokenizers import ReturnsList

CAUGHT_BY = frozenset({"tokenizer"})
NAMED = "reads the whole stream before it gives an id"


def get_tokenizer(vocab, merges, special_tokens=None):
    return ReturnsList(vocab, merges, special_tokens)
