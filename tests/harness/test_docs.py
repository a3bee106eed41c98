"""The README and docs/ link only to what the repository holds: every relative link names a
file or folder inside it, and every `#anchor` a heading of the page it points to."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# `[text](target)` and `![alt](target)`; a title after the target is not used here.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$", re.MULTILINE)


def pages(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return FENCE.sub("", text)


def anchors(page: Path) -> set[str]:
    """GitHub's ids for the page's headings: lowercased, punctuation dropped, spaces to
    hyphens."""
    ids = set()
    for title in HEADING.findall(_prose(page.read_text())):
        words = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower())
        ids.add(words.replace(" ", "-"))
    return ids


def broken_links(root: Path, files: list[Path]) -> list[str]:
    """`page: target (why)` for every relative link of `files` that does not resolve."""
    broken = []
    for page in files:
        # A code span is no link, but a link's text may be one: `[`x`](y)` keeps `[](y)`.
        text = CODE_SPAN.sub("", _prose(page.read_text()))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}: {target}"
            if not resolved.is_relative_to(root):
                broken.append(f"{where} (outside the repository)")
            elif not resolved.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{where} (no such heading)")
    return broken


def test_every_relative_link_of_the_readme_and_docs_resolves():
    assert broken_links(ROOT, pages(ROOT)) == []


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Its `part`\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#its-part) [`code`](docs/a.md) ![x](docs/a.md)\n"
        "[gone](docs/b.md) [bad anchor](docs/a.md#nothing) [out](../SPEC.md)\n"
        "`[not a link](nowhere.md)`\n\n```\n[nor this](nowhere.md)\n```\n"
    )
    assert broken_links(tmp_path, pages(tmp_path)) == [
        "README.md: docs/b.md (no such file)",
        "README.md: docs/a.md#nothing (no such heading)",
        "README.md: ../SPEC.md (outside the repository)",
    ]
