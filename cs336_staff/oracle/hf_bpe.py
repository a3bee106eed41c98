"""Hugging Face ``tokenizers`` (Rust) as a second reference for byte-level BPE on real text.

`oracle.bpe` is plainly right but too slow for a vocabulary of thousands of merges applied
to pages of text; this module gives the expected ids of such cases instead. It shares no code
with `oracle.bpe` or `cs336_basics`.

Hugging Face's byte-level BPE works on strings in GPT-2's byte alphabet, where each byte is
one printable character: printable Latin-1 bytes stand for themselves, the other 68 for
chr(256), chr(257), ... in byte order (Radford et al., 2019). Vocabularies here are in the
contract's layout (ids 0–255 the bytes, then the special tokens, then one id per merge) and
are translated to and from that alphabet at the boundary.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, trainers

_PRINTABLE = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
              *range(ord("®"), ord("ÿ") + 1)]  # fmt: skip
CHAR_OF_BYTE = {b: chr(b) for b in _PRINTABLE} | {
    b: chr(256 + n) for n, b in enumerate(b for b in range(256) if b not in _PRINTABLE)
}
BYTE_OF_CHAR = {c: b for b, c in CHAR_OF_BYTE.items()}


def _chars(token: bytes) -> str:
    return "".join(CHAR_OF_BYTE[b] for b in token)


def _bytes(chars: str) -> bytes:
    return bytes(BYTE_OF_CHAR[c] for c in chars)


def untrained(vocab_size: int, special_tokens: list[str]) -> tuple[Tokenizer, trainers.BpeTrainer]:
    """Hugging Face's byte-level BPE tokenizer before training, and the trainer that makes
    it learn a vocabulary of ``vocab_size`` over all 256 bytes and ``special_tokens``."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    return tokenizer, trainer


def train(
    texts: list[str], vocab_size: int, special_tokens: list[str]
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """A vocabulary (contract layout) and merges trained by Hugging Face's BPE trainer, each
    string of ``texts`` a separate sequence. Its tie-breaking is its own: the result is an
    input for encoding cases, never an expected training result."""
    tokenizer, trainer = untrained(vocab_size, special_tokens)
    tokenizer.train_from_iterator(texts, trainer)
    merges = [(_bytes(a), _bytes(b))
              for a, b in json.loads(tokenizer.to_str())["model"]["merges"]]  # fmt: skip
    vocab = {i: bytes([i]) for i in range(256)}
    vocab |= {256 + j: s.encode("utf-8") for j, s in enumerate(special_tokens)}
    vocab |= {len(vocab) + k: a + b for k, (a, b) in enumerate(merges)}
    if len(vocab) != tokenizer.get_vocab_size():
        raise RuntimeError(
            f"hf_bpe.train: {tokenizer.get_vocab_size()} tokens trained, but the bytes, special "
            f"tokens and merges make {len(vocab)}"
        )
    return vocab, merges


def loaded(
    vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], special_tokens: list[str]
) -> Tokenizer:
    """Hugging Face's BPE model with ``vocab`` and ``merges``; special tokens are its added
    tokens, which it matches longest first."""
    tokenizer = Tokenizer(
        models.BPE(
            vocab={_chars(t): i for i, t in vocab.items()},
            merges=[(_chars(a), _chars(b)) for a, b in merges],
        )
    )
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.add_special_tokens(
        [AddedToken(s, special=True, normalized=False) for s in special_tokens]
    )
    return tokenizer


def encoder(
    vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], special_tokens: list[str]
) -> Callable[[str], list[int]]:
    """``encode(text) -> ids`` by :func:`loaded`, ids in ``vocab``'s numbering."""
    tokenizer = loaded(vocab, merges, special_tokens)
    # An added token may get an id of Hugging Face's own; the contract's is its bytes' id.
    id_of = {t: i for i, t in vocab.items()}
    ours = {tokenizer.token_to_id(s): id_of[s.encode("utf-8")] for s in special_tokens}

    def encode(text: str) -> list[int]:
        return [ours.get(i, i) for i in tokenizer.encode(text, add_special_tokens=False).ids]

    return encode
