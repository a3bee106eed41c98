"""A tokenizer whose encode walks every merge in rank order over each pre-token, with no
memory of the pre-tokens it has seen: the right ids, at a cost that grows with the merges."""

from tests.adapters import *  # noqa: F403
from tests.evidence.cost._tokenizers import RankOrder

CAUGHT_BY = frozenset({"tokenizer"})
NAMED = "applies every merge in rank order"


def get_tokenizer(vocab, merges, special_tokens=None):
    return RankOrder(vocab, merges, special_tokens)
