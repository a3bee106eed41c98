"""The known mistakes' table is kept between grading runs under a name that changes with
anything it is computed from (`cs336_harness/grading/inputs/table_cache.py`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cs336_harness.grading.inputs import table_cache
from cs336_harness.judging.diagnosis import diagnose


@pytest.fixture
def computed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Where write_table was asked to write, in order (it writes the fixtures' manifest)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls: list[Path] = []

    def write(fixtures: Path, path: Path) -> Path:
        calls.append(path)
        path.write_bytes((fixtures / "MANIFEST.sha256").read_bytes())
        return path

    monkeypatch.setattr(diagnose, "write_table", write)
    return calls


def _fixtures(folder: Path, manifest: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "MANIFEST.sha256").write_text(manifest)
    return folder


def test_a_table_is_computed_once_per_fixtures(tmp_path: Path, computed: list[Path]):
    first = _fixtures(tmp_path / "a", "one")
    table_cache.table(first, tmp_path / "t1")
    table_cache.table(first, tmp_path / "t2")
    assert len(computed) == 1 and (tmp_path / "t2").read_text() == "one"
    table_cache.table(_fixtures(tmp_path / "b", "two"), tmp_path / "t3")
    assert len(computed) == 2 and (tmp_path / "t3").read_text() == "two"


def test_the_name_changes_with_the_code_that_computes_it(tmp_path: Path):
    fixtures = _fixtures(tmp_path / "fixtures", "one")
    repo = tmp_path / "repo"
    for source in table_cache.SOURCES:
        (repo / source).mkdir(parents=True)
        (repo / source / "x.py").write_text("A = 1\n")
    before = table_cache.key(fixtures, repo)
    (repo / "cs336_staff" / "x.py").write_text("A = 2\n")
    assert table_cache.key(fixtures, repo) != before


def test_only_the_newest_tables_are_kept(tmp_path: Path, computed: list[Path]):
    for i in range(table_cache.KEPT + 3):
        table_cache.table(_fixtures(tmp_path / f"f{i}", str(i)), tmp_path / f"t{i}")
        for kept in table_cache.cache_dir().glob("*.safetensors"):  # older than the next
            os.utime(kept, (kept.stat().st_mtime - 1,) * 2)
    assert len(list(table_cache.cache_dir().glob("*.safetensors"))) == table_cache.KEPT
