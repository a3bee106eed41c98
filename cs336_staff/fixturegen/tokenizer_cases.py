"""Cases for byte-level BPE: training (`train_bpe`) and encoding/decoding (`tokenizer`).

Most corpora are drawn from the seed out of a few words chosen for what they stress (equal
pair counts, special tokens that repeat or overlap, 4-byte UTF-8, blank lines, long runs of
one character); expected merges, vocabularies and ids come from `oracle.bpe`. The
`shakespeare` cases take real English from the committed corpus (`data/`) at offsets drawn
from the seed: training on a few pages, checked by `oracle.bpe`; encoding pages with a
vocabulary of thousands of merges, whose expected ids come from Hugging Face `tokenizers`
(`oracle.hf_bpe`), since applying that many merges one by one is too slow.

Storage: text and byte strings are UTF-8 bytes in uint8 tensors. A list of byte strings is
one flat uint8 tensor plus an int64 tensor of lengths (`<name>_flat`, `<name>_lengths`); a
vocabulary is stored in id order, ids 0 … V−1. Merges have lengths of shape (count, 2).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np

from cs336_staff.fixturegen.upstream_calls import upstream_passes
from cs336_staff.fixturegen.writer import FixtureSet
from cs336_staff.oracle import bpe, hf_bpe

END = "<|endoftext|>"
CORPUS = Path(__file__).resolve().parents[2] / "data" / "shakespeare_tragedies.txt"
# Characters of the corpus the encoding case's vocabulary is trained on (a window drawn from
# the seed), and that vocabulary's size: about 0.2 s of Hugging Face training.
HF_TRAINING_CHARS = 300_000
HF_VOCAB_SIZE = 4000


def _utf8(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def pack(strings: list[bytes], name: str) -> dict[str, np.ndarray]:
    """`<name>_flat` (uint8, every string concatenated) and `<name>_lengths` (int64)."""
    return {
        f"{name}_flat": np.frombuffer(b"".join(strings), dtype=np.uint8),
        f"{name}_lengths": np.array([len(s) for s in strings], dtype=np.int64),
    }


def pack_model(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]]) -> dict[str, np.ndarray]:
    if sorted(vocab) != list(range(len(vocab))):
        raise ValueError("pack_model: the vocabulary's ids must be 0 … V−1")
    merged = pack([b for pair in merges for b in pair], "merges")
    merged["merges_lengths"] = merged["merges_lengths"].reshape(-1, 2)
    return pack([vocab[i] for i in range(len(vocab))], "vocab") | merged


def _corpus(rng: np.random.Generator, words: list[str], count: int, separator: str = "") -> str:
    return separator.join(rng.choice(words, size=count).tolist())


@cache
def _shakespeare() -> str:
    return CORPUS.read_text(encoding="utf-8")


def _passage(rng: np.random.Generator, length: int) -> str:
    """``length`` characters of the corpus from a line start drawn from ``rng``."""
    text = _shakespeare()
    start = text.rfind("\n", 0, int(rng.integers(len(text) - length))) + 1
    return text[start : start + length]


# Upstream's tests train with special_tokens=["<|endoftext|>"], whether or not the corpus
# holds it; the cases that call otherwise, or that upstream's handout leaves open, are
# hardening.
NO_SPECIALS = upstream_passes('special_tokens=["<|endoftext|>"]', "an empty list")
OVERLAPPING = (
    "upstream's handout does not say how special tokens that overlap are split during training"
)
EXHAUSTED = (
    "upstream's handout does not say what training does once no pair is left before vocab_size"
)

# name -> (description, special tokens, merges to learn, the corpus from a generator, why
# the case is hardening or None)
CORPORA = {
    "ties": (
        "distinct two-letter words, each 3 or 5 times: most merges are ties, broken toward "
        "the lexicographically greater pair",
        [END],
        24,
        lambda rng: "".join(
            f" {a}{b}" * int(rng.choice([3, 5]))
            for a, b in zip(rng.permutation(list("qwertyuiop")), "asdfghjklz", strict=True)
        ),
        None,
    ),
    "repeated_special": (
        "documents joined by <|endoftext|>, sometimes twice in a row: no pair inside or across "
        "a special token is counted, and the token is in the vocabulary",
        [END],
        40,
        lambda rng: "".join(
            _corpus(rng, [" the", " cat", " sat", "|>", "<|", " end", "of", "text"], 6)
            + END * int(rng.integers(1, 3))
            for _ in range(40)
        ),
        None,
    ),
    "overlapping_special": (
        "special tokens <|s|> and <|s|>zzz: the longer one matches first, so no 'zz' pair is "
        "ever counted",
        ["<|s|>", "<|s|>zzz"],
        30,
        lambda rng: _corpus(rng, [" ab", " ba", "<|s|>zzz", "<|s|>", " zb", "bz"], 150),
        OVERLAPPING,
    ),
    "emoji": (
        "words beyond the Basic Multilingual Plane (4-byte UTF-8) and accents: merges of "
        "partial characters' bytes",
        [END],
        40,
        lambda rng: _corpus(rng, [" 🙂", "🙂🙂", " 🐍x", " ü", " naïve", " 中文", "𝔘", END], 150),
        None,
    ),
    "blank_lines_and_runs": (
        "empty lines, runs of spaces and long runs of one character: whitespace pre-tokens "
        "and overlapping pairs (aaaa)",
        [END],
        40,
        lambda rng: _corpus(rng, ["\n", "\n\n\n", "aaaaaaaaaaaa", "   ", " a", "\t\n", "bb"], 200),
        None,
    ),
    "shakespeare": (
        "two pages of Shakespeare at drawn offsets, joined by <|endoftext|>: real English, "
        "with its many ties among rare pairs",
        [END],
        64,
        lambda rng: _passage(rng, 2500) + END + _passage(rng, 2500),
        None,
    ),
    "exhausted": (
        "a vocabulary larger than the corpus can fill: training stops when no pair is left",
        [END],
        500,
        lambda rng: _corpus(rng, [" hi", " ho", END], 12),
        EXHAUSTED,
    ),
    "no_special_tokens": (
        "no special tokens at all: <|endoftext|> in the corpus is plain text, merged as any",
        [],
        30,
        lambda rng: _corpus(rng, [" the", " cat", END, " sat"], 60),
        NO_SPECIALS,
    ),
}


def add_train_bpe(fs: FixtureSet) -> dict[str, tuple[dict[int, bytes], list, list[str], str]]:
    """The training cases; returns each corpus's trained model for the tokenizer cases."""
    models = {}
    for case_id, (description, specials, merges_wanted, draw, hardening) in CORPORA.items():
        text = draw(fs.rng("train_bpe", case_id))
        vocab, merges, counts = bpe.train(text, 256 + len(specials) + merges_wanted, specials)
        # A draw whose corpus runs out of pairs early would make the case about exhaustion,
        # which upstream leaves open and `exhausted` alone tests: every other case asks for
        # the merges its corpus offers, no more. The merges are the same either way.
        wanted = merges_wanted if hardening is EXHAUSTED else len(merges)
        vocab_size = 256 + len(specials) + wanted
        fs.add(
            "train_bpe",
            case_id,
            description,
            {"vocab_size": vocab_size, "special_tokens": specials},
            {"corpus": _utf8(text), "merge_counts": np.array(counts, dtype=np.int64)}
            | pack_model(vocab, merges),
            None,
            hardening=hardening,
        )
        models[case_id] = (vocab, merges, specials, text)
    return models


def _tokenizer_case(
    fs: FixtureSet,
    case_id: str,
    description: str,
    model: tuple[dict[int, bytes], list, list[str], str],
    texts: list[str],
    decode: list[list[int]],
    without_special_tokens: bool = False,
    reference: Callable[[str], list[int]] | None = None,
) -> None:
    """One encoding case; expected ids from ``reference`` (default: `oracle.bpe.encode`).
    The tokenizer gets the special tokens the model was trained with, or, `without_special_
    tokens`, None, as upstream passes it for no special tokens."""
    vocab, merges, trained_specials, _ = model
    specials = [] if without_special_tokens else trained_specials
    inputs = pack_model(vocab, merges) | pack([t.encode() for t in texts], "texts")
    encode = reference or (lambda text: bpe.encode(text, vocab, merges, specials))
    encoded = [encode(t) for t in texts]
    # Every case decodes its first text's ids back, and a lone UTF-8 continuation byte.
    decode = [*decode, encoded[0], [0x80]]
    inputs |= {
        "expected_ids_flat": np.array([i for ids in encoded for i in ids], dtype=np.int64),
        "expected_ids_lengths": np.array([len(ids) for ids in encoded], dtype=np.int64),
        "decode_flat": np.array([i for ids in decode for i in ids], dtype=np.int64),
        "decode_lengths": np.array([len(ids) for ids in decode], dtype=np.int64),
    }
    inputs |= pack([bpe.decode(ids, vocab).encode() for ids in decode], "expected_decoded")
    given = None if without_special_tokens else specials
    fs.add("tokenizer", case_id, description, {"special_tokens": given}, inputs, None)


def add_tokenizer(fs: FixtureSet) -> None:
    """Both families: training cases first, then encoding with the models they trained."""
    models = add_train_bpe(fs)
    rng = fs.rng("tokenizer", "texts")
    ids_of = {name: {t: i for i, t in m[0].items()} for name, m in models.items()}
    # A merged token that is not valid UTF-8 alone (part of a 4-byte character).
    partial = next(i for i, t in sorted(models["emoji"][0].items())
                   if i >= 256 and not _is_utf8(t))  # fmt: skip
    _tokenizer_case(
        fs, "repeated_special",
        "text with <|endoftext|> alone, twice in a row, first and last; words inside and "
        "outside the training corpus",
        models["repeated_special"],
        [models["repeated_special"][3][:200], END + " the cat" + END + END, " sat<|" + END,
         "|>" + END + "<|", "unseen words: zebra 42!", ""],
        [[ids_of["repeated_special"][END.encode()]]],
    )  # fmt: skip
    _tokenizer_case(
        fs, "overlapping_special",
        "<|s|>zzz and <|s|>: the longer special token wins where both match",
        models["overlapping_special"],
        ["<|s|>zzz<|s|>", "<|s|>zz", " ab<|s|>zzzz ba", _corpus(rng, [" ab", "<|s|>zzz",
                                                                     "<|s|>", "z"], 30)],
        [],
    )  # fmt: skip
    _tokenizer_case(
        fs, "emoji",
        "4-byte characters merged and not merged; decoding a lone continuation byte, a cut "
        "emoji and a byte 0xff gives U+FFFD, never an error",
        models["emoji"],
        [models["emoji"][3][:300], "🙂🐍🙂 naïve 中文𝔘!", "🦀 unseen 🙃"],
        [[0x80], [0xFF, ord("a")], [0xF0, 0x9F], [partial, ord("x")],
         [ord("a"), 0xC3], bpe.encode(" 🙂 ü", *models["emoji"][:2], [END])],
    )  # fmt: skip
    _tokenizer_case(
        fs, "no_special_tokens",
        "a tokenizer built without special tokens (None, as upstream passes it): "
        "<|endoftext|> in the text is plain text",
        models["repeated_special"],
        [" the cat" + END + " sat"],
        [],
        without_special_tokens=True,
    )  # fmt: skip
    _tokenizer_case(
        fs, "blank_lines_and_runs",
        "blank lines, space runs before a word (\\s+(?!\\S)) and long runs of one character",
        models["blank_lines_and_runs"],
        ["\n\n\n\n", "aaaaaaaaaaaaaaaaaaaaaaaaa", "   a\n\n  bb \t", "x" * 40 + "\n" * 9],
        [],
    )  # fmt: skip
    _add_shakespeare_encoding(fs)


def _add_shakespeare_encoding(fs: FixtureSet) -> None:
    rng = fs.rng("tokenizer", "shakespeare")
    window = _passage(rng, HF_TRAINING_CHARS)
    # Lines as sequences: Hugging Face's trainer counts them in parallel.
    vocab, merges = hf_bpe.train(window.splitlines(keepends=True), HF_VOCAB_SIZE, [END])
    # Each text, and its decoding, within the grader protocol's 2000 characters per string.
    texts = [
        _passage(rng, 1500),
        _passage(rng, 600) + END + _passage(rng, 600),
        _passage(rng, 1900),
    ]
    _tokenizer_case(
        fs, "shakespeare",
        f"pages of Shakespeare encoded with {len(merges)} merges trained on a window of the "
        "corpus; expected ids from Hugging Face tokenizers",
        (vocab, merges, [END], window),
        texts,
        [],
        reference=hf_bpe.encoder(vocab, merges, [END]),
    )  # fmt: skip
