"""BPE training whose pre-tokens are the text split at whitespace (str.split), not the GPT-2
pattern's."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._bpe_mistakes import train_with

CAUGHT_BY = frozenset({"train_bpe"})
DIAGNOSED_AS = "bpe_pretokens_split_at_whitespace"


def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
    return train_with(input_path, vocab_size, special_tokens, "whitespace_split")
