"""Text from a submission, made safe to write and to show: `clean` escapes what a terminal or
XML would act on or refuse (docs/grading.md, "Grading submissions")."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A submission's report directory is named after it: 63 characters, each at most 4 bytes of
# UTF-8, fit the 255 bytes a file name may have, whatever escapes made the name longer.
NAME_CHARS = 63
# How long a path from a submission a report shows.
PATH_CHARS = 500

_ESCAPED = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff"
_ONE_LINE = re.compile(f"[\x00-\x1f{_ESCAPED}]")
_MULTI_LINE = re.compile(f"[\x00-\x08\x0b-\x1f{_ESCAPED}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(char: str) -> str:
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def _cut(count: int) -> str:
    return f"[... {count} characters cut]"


def clean(text: str, limit: int | None, *, multiline: bool = False) -> str:
    """`text` with every code point of the kinds above escaped, and at most `limit`
    characters long (None: text already bounded where it was read), a cut one ending in
    a marker that says how many characters of `text` were cut."""
    forbidden = _MULTI_LINE if multiline else _ONE_LINE
    # An escape never shortens: only the first `limit` characters can be kept.
    head = text if limit is None else text[:limit]
    escaped = forbidden.sub(lambda m: _escape(m.group()), head)
    if limit is None or (len(text) <= limit and len(escaped) <= limit):
        return escaped
    budget = limit - len(_cut(len(text)))
    pieces: list[str] = []
    kept = size = 0
    for char in head:
        piece = _escape(char) if forbidden.match(char) else char
        if size + len(piece) > budget:
            break
        pieces.append(piece)
        kept, size = kept + 1, size + len(piece)
    return "".join(pieces) + _cut(len(text) - kept)


def clean_names(names: Iterable[str]) -> list[str]:
    """Each name cleaned to one line of at most NAME_CHARS, and unique again: a real ESC
    and the four characters `\\x1b` clean alike, so do two long names cut alike."""
    taken: set[str] = set()
    cleaned = []
    for name in names:
        candidate, n = clean(name, NAME_CHARS), 1
        while candidate in taken:
            n += 1
            candidate = clean(name, NAME_CHARS - len(f"-{n}")) + f"-{n}"
        taken.add(candidate)
        cleaned.append(candidate)
    return cleaned
