"""A tokenizer whose encode walks every merge in rank order over each pre-token, with no
memory of the pre-tokens it has seen: the right ids, at a cost that grows with the merges."""

from tests.adapters import *  # noqa: F403
from tests.evidence.cost._tokenizers import RankOrder

CAUGHT_BY = frozenset({"tokenizer"})
NAMED = "applies every merge in rank order"
# Its ids are the oracle's: the encoding tests (its round trips and streams would take
# minutes at its cost).
CORRECT_ON = "test_encode and not iterable and not cost"


def get_tokenizer(vocab, merges, special_tokens=None):
    return RankOrder(vocab, merges, special_tokens)
