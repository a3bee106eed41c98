"""BPE training that merges across pre-token boundaries (no GPT-2 pre-tokenization)."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._bpe_mistakes import train_with

CAUGHT_BY = frozenset({"train_bpe"})
DIAGNOSED_AS = "bpe_merges_across_pretokens"


def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
    return train_with(input_path, vocab_size, special_tokens, "across_pretokens")
