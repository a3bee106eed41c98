"""BPE training that splits the text at the special tokens but keeps each as a pre-token of its
own, so the pairs inside <|endoftext|> are counted (a real solution's mistake, found by
grading)."""

from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._bpe_mistakes import train_with

CAUGHT_BY = frozenset({"train_bpe"})
DIAGNOSED_AS = "bpe_special_tokens_as_pretokens"


def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
    return train_with(input_path, vocab_size, special_tokens, "specials_as_pretokens")
