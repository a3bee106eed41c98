"""SHA-256 manifest of the fixture directory, in `sha256sum` format, which every test session
checks first (docs/maintaining.md, "Fixtures and the oracle")."""

from __future__ import annotations

import hashlib
from pathlib import Path

MANIFEST_NAME = "MANIFEST.sha256"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fixtures_digest(fixtures: Path) -> str:
    """What a table was written for: the SHA-256 of the fixtures' manifest, which names every
    fixture file's own digest."""
    return _digest(fixtures / MANIFEST_NAME)


def _fixture_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file() and p.name != MANIFEST_NAME)


def write_manifest(directory: Path) -> Path:
    lines = [
        f"{_digest(p)}  {p.relative_to(directory).as_posix()}\n" for p in _fixture_files(directory)
    ]
    manifest = directory / MANIFEST_NAME
    manifest.write_text("".join(lines))
    return manifest


def manifest_problems(directory: Path) -> list[str]:
    """Every way `directory` departs from its manifest, one line each; empty when intact."""
    manifest = directory / MANIFEST_NAME
    if not manifest.is_file():
        return [f"{manifest} is missing"]
    listed: dict[str, str] = {}
    for line in manifest.read_text().splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    present = {p.relative_to(directory).as_posix(): p for p in _fixture_files(directory)}
    problems = [f"{directory / name} is missing" for name in sorted(listed.keys() - present.keys())]
    problems += [
        f"{directory / name} is not in the manifest"
        for name in sorted(present.keys() - listed.keys())
    ]
    problems += [
        f"{directory / name} was modified (its SHA-256 differs from {MANIFEST_NAME})"
        for name in sorted(listed.keys() & present.keys())
        if _digest(present[name]) != listed[name]
    ]
    return problems
