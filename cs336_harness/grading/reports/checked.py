"""Writing a report so that strict readers can read it, or not at all: one that comes out
unreadable (a lone surrogate, a character XML forbids) is the grader's bug, and stops the run
with a GraderError (exit 2) before a half-readable file is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cs336_harness.grading.errors import GraderError


def write_utf8(path: Path, text: str) -> None:
    """`text` as strict UTF-8, which has no encoding for a lone surrogate."""
    try:
        data = text.encode()
    except UnicodeEncodeError as error:
        raise GraderError(f"cannot write {path}: {error}") from None
    path.write_bytes(data)


def write_json(path: Path, document: Any, indent: int | None = None) -> None:
    """Strict JSON in UTF-8. Not `ensure_ascii`: it writes a lone surrogate as the escape
    `\\udcff`, which Python reads back but stricter readers refuse; nor NaN, which is no JSON."""
    try:
        text = json.dumps(document, ensure_ascii=False, allow_nan=False, indent=indent)
    except ValueError as error:
        raise GraderError(f"cannot write {path}: {error}") from None
    write_utf8(path, text + "\n")
