"""The upstream handout's `tests/common.py` helpers, inside the harness so that the worker can
serve them to a submission that ships none (`submission_imports`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

# The bytes GPT-2 prints as themselves: '!' … '~', '¡' … '¬' and '®' … 'ÿ' (188 of them).
# Every other byte (controls, space, DEL, NBSP, soft hyphen) is shown as chr(256 + n), n
# counting those bytes in order, so that each of the 256 bytes has a visible character.
_PRINTABLE = (range(0x21, 0x7F), range(0xA1, 0xAD), range(0xAE, 0x100))


@cache
def gpt2_bytes_to_unicode() -> dict[int, str]:
    """Byte value (0 … 255) → the one-character string GPT-2's vocabulary files write it
    as: printable bytes stand for themselves, the 68 others for chr(256), chr(257), ... in
    byte order (so the space, byte 32, is 'Ġ' = chr(288)). Cached: callers share one dict,
    as upstream's `lru_cache` makes them."""
    printable = {byte for block in _PRINTABLE for byte in block}
    shifted = (byte for byte in range(256) if byte not in printable)
    mapping = {byte: chr(byte) for byte in sorted(printable)}
    mapping |= {byte: chr(256 + n) for n, byte in enumerate(shifted)}
    return mapping


def fixtures_path(tests_folder: Path) -> Path:
    """Upstream's `FIXTURES_PATH`: the `fixtures` folder beside its `tests/common.py`."""
    return tests_folder.resolve() / "fixtures"
