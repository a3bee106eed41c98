"""What a graded run may import: the trusted tests and harness, no reference implementation."""

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from cs336_harness.grading.inputs import drawn, family_tables
from cs336_harness.grading.inputs.bundle import build_bundle, differences
from cs336_harness.grading.inputs.family_tables import family_table
from cs336_harness.grading.sandbox import interpreter
from cs336_harness.judging.diagnosis.diagnose import LiveCatalog, Table
from cs336_harness.paths import REPO_ROOT
from tests.grading.conftest import session_inputs


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("bundle")
    return build_bundle(REPO_ROOT, REPO_ROOT / "tests" / "fixtures", root / "bundle")


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_bytes())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def test_the_bundle_holds_no_implementation_a_submission_could_import(bundle):
    trusted = bundle.trusted
    assert not (trusted / "cs336_harness" / "oracle").exists()
    assert not (trusted / "cs336_harness" / "fixturegen").exists()
    adapter_functions = {
        f for f in _functions(REPO_ROOT / "tests" / "adapters.py") if f.startswith("run_")
    }
    for path in sorted(trusted.rglob("*.py")):
        assert not _functions(path) & adapter_functions, f"{path} defines adapters"
        tree = ast.parse(path.read_bytes())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + [
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
        ]
        assert not [m for m in imported if "oracle" in m or "cs336_basics" in m], path


def test_the_judge_reads_the_known_mistakes_from_a_table_not_the_catalog(
    bundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    assert not (bundle.trusted / "cs336_harness" / "diagnosis" / "catalog").exists()
    # Where this copy has the catalog, no table is written with the bundle: a family's is
    # written by a process of this copy's when a judge first asks.
    assert bundle.diagnosis_table is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # The judge's import path, which the table's process takes after the grader's copy: the
    # packages (the bundle's copy, the judge's own, is left out in the judge).
    monkeypatch.setenv("PYTHONPATH", interpreter.import_path([]))
    path = family_table(tmp_path / "tables", REPO_ROOT, bundle.fixtures, "rope")
    assert path is not None
    table = Table(path)
    live = LiveCatalog(REPO_ROOT / "tests" / "fixtures")
    # The table holds what the catalog computes, whatever the catalog has grown to, and no
    # other family's.
    names = {c.mistake for c in table.candidates("rope", "theta_100")}
    assert names == {c.mistake for c in live.candidates("rope", "theta_100")}
    assert {"rope_rotate_half", "rope_theta_fixed", "rope_positions_from_one"} <= names
    assert {key.split("/")[0] for key in table.shapes} == {"rope"}
    # Written once: another judge's ask reads it.
    monkeypatch.setattr(subprocess, "run", None)
    assert family_table(tmp_path / "tables", REPO_ROOT, bundle.fixtures, "rope") == path


def test_a_table_that_cannot_be_written_is_said_and_none_is_read(
    bundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("PYTHONPATH", interpreter.import_path([]))
    # A copy with no catalog (here, with nothing) cannot write one.
    (tmp_path / "empty").mkdir()
    assert family_table(tmp_path / "tables", tmp_path / "empty", bundle.fixtures, "rope") is None
    assert "the known mistakes of rope failed:" in capsys.readouterr().err
    assert not list((tmp_path / "tables").rglob("*.safetensors"))


def test_inputs_drawn_once_bring_every_family_s_table_and_a_run_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`cs336-grade draw` (staff drawing once for many gradings) writes every table; a run on
    those inputs has its judges read them, never write them again."""
    inputs = drawn.read(session_inputs())
    assert inputs.tables is not None
    families = ["", *LiveCatalog(inputs.fixtures).families]
    written = {p.name for p in inputs.tables.glob("*.safetensors")}
    assert written == {family_tables.file_name(f) for f in families}
    family_tables.adopt(inputs.tables, inputs.fixtures, tmp_path / "run")
    monkeypatch.setattr(subprocess, "run", None)
    for family in ("rope", ""):
        path = family_table(tmp_path / "run", REPO_ROOT, inputs.fixtures, family)
        assert (
            path is not None
            and path.read_bytes() == (inputs.tables / family_tables.file_name(family)).read_bytes()
        )


def test_the_bundle_holds_the_family_tests_only(bundle):
    tests = {p.name for p in (bundle.trusted / "tests").glob("test_*.py")}
    repo = {
        p.name
        for p in (REPO_ROOT / "tests").glob("test_*.py")
        if "pytest.mark.family(" in p.read_text()
    }
    assert tests == repo


def test_any_change_to_a_copy_is_found(bundle, tmp_path: Path):
    copy = tmp_path / "copy"
    shutil.copytree(bundle.root, copy)
    assert differences(copy, bundle.expected) == []
    (copy / "fixtures" / "silu.safetensors").write_bytes(b"changed")
    (copy / "trusted" / "tests" / "extra.py").write_text("")
    (copy / "trusted" / "tests" / "families" / "gradients.py").unlink()
    assert differences(copy, bundle.expected) == [
        "trusted/tests/families/gradients.py was deleted",
        "trusted/tests/extra.py was added",
        "fixtures/silu.safetensors was modified",
    ]
