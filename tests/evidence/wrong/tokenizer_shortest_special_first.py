"""A tokenizer that matches overlapping special tokens shortest first (<|s|> before <|s|>zzz)."""

import regex

from cs336_basics.tokenizer import Tokenizer
from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"tokenizer"})


def get_tokenizer(vocab, merges, special_tokens=None):
    tokenizer = Tokenizer(vocab, merges, special_tokens)
    if special_tokens:
        shortest_first = sorted(special_tokens, key=len)
        tokenizer._special_pattern = regex.compile(
            "|".join(regex.escape(s) for s in shortest_first)
        )
    return tokenizer
