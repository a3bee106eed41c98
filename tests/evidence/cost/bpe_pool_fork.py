"""An efficient trainer whose pre-tokenization runs in a pool of 4 processes started by
`fork`: judged on its algorithm, not on its processes' start or the cores it used."""

from tests.adapters import *  # noqa: F403
from tests.evidence.cost._parallel_bpe import train_in_pool

CAUGHT_BY = frozenset()
NAMED = ""


def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
    return train_in_pool(input_path, vocab_size, special_tokens, "fork")
