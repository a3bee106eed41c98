"""Cleaning a submission's text: what is escaped, what is kept, the length cap, and that
cleaning what is clean changes nothing."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console
from rich.text import Text

from cs336_harness.untrusted import NAME_CHARS, clean, clean_names

# XML 1.0's Char production.
XML_CHAR = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")
HOSTILE = (
    "ctl \x00\x01\x07\x08\x0b\x0c\x1f del \x7f "
    "clear \x1b[2J title \x1b]0;pwned\x07 csi \x9b31m osc \x9d "
    "lone \udcff\ud800 pair? \ud83d\ude00 nonchars \ufffe\uffff "
    "bidi \u202eevil\u202c \u2066x\u2069 seps \u2028\u2029 cr \r tab \t nl \n end"
)


@pytest.mark.parametrize(
    ("char", "escape"),
    [
        ("\x00", "\\x00"),
        ("\x07", "\\x07"),
        ("\x1b", "\\x1b"),
        ("\r", "\\r"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),
        ("\x9b", "\\x9b"),
        ("\x9d", "\\x9d"),
        ("\ud800", "\\ud800"),
        ("\udcff", "\\udcff"),
        ("\ufffe", "\\ufffe"),
        ("\uffff", "\\uffff"),
        ("\u202e", "\\u202e"),
        ("\u2066", "\\u2066"),
        ("\u2028", "\\u2028"),
    ],
)
def test_each_kind_of_character_is_escaped_visibly(char: str, escape: str):
    assert clean(f"a{char}b", 100) == f"a{escape}b"
    assert clean(f"a{char}b", 100, multiline=True) == f"a{escape}b"


def test_tab_and_newline_stay_only_in_multi_line_text():
    assert clean("a\tb\nc", 100) == "a\\tb\\nc"
    assert clean("a\tb\nc\r\n", 100, multiline=True) == "a\tb\nc\\r\n"


def test_ordinary_text_is_kept_as_it_is():
    text = "KeyError: 'weight' ≤ 1e-6 [bold]x[/] é 中文 😀 \\x1b C:\\path ~!@#$%^&*()"
    assert clean(text, 100) == text


def test_every_code_point_comes_out_as_xml_characters_that_encode():
    everything = "".join(map(chr, range(0x110000)))
    for multiline in (False, True):
        cleaned = clean(everything, None, multiline=multiline)
        assert XML_CHAR.fullmatch(cleaned)
        cleaned.encode()  # strict UTF-8: no lone surrogate left
        assert ET.fromstring(ET.tostring(ET.Element("a", name=cleaned[:50_000]))) is not None
        for code in (0x1B, 0x9B, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028):
            assert chr(code) not in cleaned


def test_a_long_text_is_cut_with_a_marker_that_says_how_much():
    cleaned = clean("x" * 1_000_000, 300)
    assert len(cleaned) <= 300
    kept = cleaned.count("x")
    assert cleaned == "x" * kept + f"[... {1_000_000 - kept} characters cut]"


def test_a_cut_never_splits_an_escape():
    cleaned = clean("\x1b" * 100, 50)
    assert len(cleaned) <= 50
    body, _, marker = cleaned.partition("[...")
    assert body == "\\x1b" * (len(body) // 4)
    assert marker == f" {100 - len(body) // 4} characters cut]"


def test_escapes_that_lengthen_a_short_text_past_the_limit_cut_it():
    cleaned = clean("\x00" * 40, 100)
    assert len(cleaned) <= 100 and cleaned.endswith("characters cut]")


@pytest.mark.parametrize("limit", [60, 300, 5000, None])
@pytest.mark.parametrize("multiline", [False, True])
def test_cleaning_clean_text_changes_nothing(limit: int | None, multiline: bool):
    for text in (HOSTILE, HOSTILE * 100, "\x1b" * 10_000, "plain"):
        once = clean(text, limit, multiline=multiline)
        assert clean(once, limit, multiline=multiline) == once


def test_names_stay_unique_short_and_fit_a_file_name():
    names = [
        "a\x1b",
        "a\\x1b",  # cleans like the first
        "a\\x1b-2",  # like the first's renaming
        "😀" * 63,
        "\udcff" * 255,
        "\udcff" * 254,  # cut like the one before
        "alice",
    ]
    cleaned = clean_names(names)
    assert len(set(cleaned)) == len(names)
    assert cleaned[0] == "a\\x1b" and cleaned[-1] == "alice"
    for name in cleaned:
        assert len(name) <= NAME_CHARS and len(name.encode()) <= 255
        assert clean(name, NAME_CHARS) == name


def _rendered(text: Text) -> str:
    console = Console(file=io.StringIO(), width=200)
    console.print(text)
    return console.file.getvalue()


def test_rich_shows_escape_sequences_in_text_raw_so_cleaning_comes_first():
    title = "\x1b]0;pwned\x07 \x1b[2J \x9b"
    assert "\x1b]0;pwned" in _rendered(Text(title))  # rich passes ESC and C1 through
    shown = _rendered(Text(clean(title, 100)))
    assert shown == "\\x1b]0;pwned\\x07 \\x1b[2J \\x9b\n"
