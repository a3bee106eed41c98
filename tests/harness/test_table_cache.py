"""The known mistakes' tables: a family's is kept between grading runs under a name that
changes with anything it is computed from (`cs336_harness/grading/inputs/table_cache.py`),
and the diagnosis asks for one only when a case of its family fails (`LazyTable`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from cs336_harness.grading.inputs import table_cache
from cs336_harness.judging.diagnosis import diagnose


@pytest.fixture
def computed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Where write_table was asked to write, in order (it writes the fixtures' manifest)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls: list[Path] = []

    def write(fixtures: Path, path: Path, families: list[str]) -> Path:
        calls.append(path)
        path.write_bytes((fixtures / "MANIFEST.sha256").read_bytes() + "".join(families).encode())
        return path

    monkeypatch.setattr(diagnose, "write_table", write)
    return calls


def _fixtures(folder: Path, manifest: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "MANIFEST.sha256").write_text(manifest)
    return folder


def test_a_table_is_computed_once_per_fixtures_and_family(tmp_path: Path, computed: list[Path]):
    first = _fixtures(tmp_path / "a", "one")
    table_cache.table(first, tmp_path / "t1", "rope")
    table_cache.table(first, tmp_path / "t2", "rope")
    assert len(computed) == 1 and (tmp_path / "t2").read_text() == "onerope"
    table_cache.table(first, tmp_path / "t3", "silu")
    assert len(computed) == 2 and (tmp_path / "t3").read_text() == "onesilu"
    table_cache.table(_fixtures(tmp_path / "b", "two"), tmp_path / "t4", "rope")
    assert len(computed) == 3 and (tmp_path / "t4").read_text() == "tworope"


def test_the_name_changes_with_the_code_that_computes_it(tmp_path: Path):
    fixtures = _fixtures(tmp_path / "fixtures", "one")
    repo = tmp_path / "repo"
    for source in table_cache.SOURCES:
        (repo / source).mkdir(parents=True)
        (repo / source / "x.py").write_text("A = 1\n")
    before = table_cache.key(fixtures, "rope", repo)
    (repo / "cs336_staff" / "x.py").write_text("A = 2\n")
    assert table_cache.key(fixtures, "rope", repo) != before


def test_only_the_newest_tables_are_kept(tmp_path: Path, computed: list[Path]):
    for i in range(table_cache.KEPT + 3):
        table_cache.table(_fixtures(tmp_path / f"f{i}", str(i)), tmp_path / f"t{i}", "rope")
        for kept in table_cache.cache_dir().glob("*.safetensors"):  # older than the next
            os.utime(kept, (kept.stat().st_mtime - 1,) * 2)
    assert len(list(table_cache.cache_dir().glob("*.safetensors"))) == table_cache.KEPT


class _Tables:
    """A LazyTable's `table(family)`, counting the families asked for; each answers with a
    table of its own name's one mistake on case `c`."""

    def __init__(self, folder: Path):
        self.folder, self.asked = folder, []

    def __call__(self, family: str) -> Path:
        self.asked.append(family)
        mistake = f"{family or 'none'}_wrong"
        key = f"{family}/c/{mistake}"
        tensors = {f"{key}/index": np.arange(2), f"{key}/values": np.zeros(2)}
        facts = {"messages": {mistake: "wrong"}, "graded": [], "families": ["rope", "silu"]}
        metadata = {k: json.dumps(v) for k, v in facts.items()} | {
            "mistake_families": json.dumps({mistake: [family]}),
            "shapes": json.dumps({key: [2]} if family else {}),
            "scales": json.dumps({key: 1.0} if family else {}),
        }
        path = self.folder / f"{family or 'none'}.safetensors"
        save_file(tensors if family else {}, str(path), metadata=metadata)
        return path


def test_a_family_table_is_asked_for_when_its_family_fails_and_once(tmp_path: Path):
    tables = _Tables(tmp_path)
    lazy = diagnose.LazyTable(tables)
    assert tables.asked == []  # a run that fails nothing writes no table
    assert [c.mistake for c in lazy.candidates("rope", "c")] == ["rope_wrong"]
    assert [c.mistake for c in lazy.candidates("rope", "c")] == ["rope_wrong"]
    assert lazy.candidates("gelu", "c") is None  # a family the catalog does not cover
    assert tables.asked == ["rope", "gelu"]
    # The catalog's facts come with any family's table.
    assert lazy.mistake_families == {"rope_wrong": {"rope"}} and len(tables.asked) == 2


def test_the_facts_alone_come_from_the_table_of_no_family(tmp_path: Path):
    tables = _Tables(tmp_path)
    lazy = diagnose.LazyTable(tables)
    assert lazy.mistake_families == {"none_wrong": {""}} and tables.asked == [""]


def test_a_table_that_cannot_be_had_diagnoses_nothing(tmp_path: Path):
    lazy = diagnose.LazyTable(lambda family: None)
    assert lazy.candidates("rope", "c") is None and lazy.mistake_families == {}
