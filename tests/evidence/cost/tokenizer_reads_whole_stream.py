"""A tokenizer whose encode_iterable joins the whole stream, then encodes it: the ids are
right, the memory grows with the stream."""

from tests.adapters import *  # noqa: F403
from tests.evidence.cost._tokenizers import ReadsWholeStream

CAUGHT_BY = frozenset({"tokenizer"})
NAMED = "reads the whole stream before it gives an id"


def get_tokenizer(vocab, merges, special_tokens=None):
    return ReadsWholeStream(vocab, merges, special_tokens)
