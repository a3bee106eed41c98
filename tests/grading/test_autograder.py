"""`cs336-grade autograder`: the Gradescope package, built, unpacked and run as Gradescope
runs it, on submissions in an /autograder-shaped tree (AUTOGRADER_ROOT). Not setup.sh,
which installs system packages: run_autograder uses this environment (AUTOGRADER_PYTHON)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from cs336_harness.grading import cli
from cs336_harness.grading import run_autograder as run_autograder_module
from cs336_harness.grading.autograder import build
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.handout import export
from cs336_harness.grading.scoring import DEFAULT_RUBRIC
from tests.grading import synthetic
from tests.grading.conftest import MEMORY_LIMIT, TEST_TIMEOUT, grade, without_bwrap

SETTINGS = """\
[gradescope]
visibility = "after_due_date"
stdout_visibility = "visible"
output_format = "md"
leaderboard = true

[gradescope.family_visibility]
softmax = "hidden"
hardening = "after_published"
"""

# Gradescope's results.json fields (its autograder specification) and their types;
# `max_score` at the top is the grader's own. A number is never a bool.
NUMBER = (int, float)
TOP_FIELDS = {
    "score": NUMBER,
    "max_score": NUMBER,
    "execution_time": NUMBER,
    "output": str,
    "output_format": str,
    "test_output_format": str,
    "test_name_format": str,
    "visibility": str,
    "stdout_visibility": str,
    "extra_data": dict,
    "tests": list,
    "leaderboard": list,
}
TEST_FIELDS = {
    "score": NUMBER,
    "max_score": NUMBER,
    "status": str,
    "name": str,
    "name_format": str,
    "number": str,
    "output": str,
    "output_format": str,
    "tags": list,
    "visibility": str,
    "extra_data": dict,
}
LEADERBOARD_FIELDS = {"name": str, "value": (int, float, str), "order": str}
ALLOWED = {
    "visibility": {"visible", "hidden", "after_due_date", "after_published"},
    "stdout_visibility": {"visible", "hidden", "after_due_date", "after_published"},
    "output_format": {"text", "html", "simple_format", "md", "ansi"},
    "test_output_format": {"text", "html", "simple_format", "md", "ansi"},
    "test_name_format": {"text", "html", "simple_format", "md", "ansi"},
    "name_format": {"text", "html", "simple_format", "md", "ansi"},
    "status": {"passed", "failed"},
    "order": {"asc", "desc"},
}


def _problems(entry: dict[str, Any], fields: dict[str, Any], where: str) -> list[str]:
    problems = [f"{where}: {key} is not a Gradescope field" for key in entry.keys() - fields]
    for key, value in entry.items():
        kind = fields.get(key)
        if kind is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            problems.append(f"{where}: {key} = {value!r} is not {kind}")
        elif key in ALLOWED and value not in ALLOWED[key]:
            problems.append(f"{where}: {key} = {value!r} is not one of {sorted(ALLOWED[key])}")
    return problems


def gradescope_problems(results: dict[str, Any]) -> list[str]:
    """Every way `results` departs from Gradescope's documented fields, types and values."""
    problems = _problems(results, TOP_FIELDS, "results")
    for i, test in enumerate(results.get("tests", [])):
        problems += _problems(test, TEST_FIELDS, f"tests[{i}]")
    for i, entry in enumerate(results.get("leaderboard", [])):
        problems += _problems(entry, LEADERBOARD_FIELDS, f"leaderboard[{i}]")
    return problems


@pytest.fixture(scope="module")
def rubric(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course's points, with every Gradescope setting away from its default."""
    text = DEFAULT_RUBRIC.read_text()
    path = tmp_path_factory.mktemp("rubric") / "rubric.toml"
    path.write_text(text[: text.index("[gradescope]")] + SETTINGS)
    return path


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory, rubric: Path) -> Path:
    path = tmp_path_factory.mktemp("package") / "autograder.zip"
    limits = (f"--test-timeout={TEST_TIMEOUT}", f"--memory-limit={MEMORY_LIMIT}")
    built = grade("autograder", "--rubric", rubric, *limits, out=path)
    assert built.returncode == 0, built.stderr
    return path


def run_autograder(
    package: Path, root: Path, submission: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Lay out `root` as Gradescope's /autograder and run its run_autograder there."""
    with zipfile.ZipFile(package) as archive:
        archive.extractall(root / "source")
        for info in archive.infolist():  # extractall drops the Unix permissions
            (root / "source" / info.filename).chmod(info.external_attr >> 16)
    shutil.copyfile(root / "source" / "run_autograder", root / "run_autograder")
    (root / "run_autograder").chmod(0o755)
    shutil.copytree(submission, root / "submission")
    env = (env or dict(os.environ)) | {
        "AUTOGRADER_ROOT": str(root),
        "AUTOGRADER_PYTHON": sys.executable,
    }
    return subprocess.run(
        [root / "run_autograder"], cwd=root, env=env, capture_output=True, text=True, timeout=900
    )


def autograde(package: Path, root: Path, submission: Path) -> dict[str, Any]:
    """run_autograder's results.json, from a run that completed."""
    done = run_autograder(package, root, submission)
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text())


def test_the_package_holds_the_harness_and_oracle_but_no_reference(package: Path, rubric: Path):
    with zipfile.ZipFile(package) as archive:
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        carried_rubric = archive.read("rubric.toml").decode()
        run = archive.read("run_autograder").decode()
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    needed = ["pyproject.toml", "uv.lock", "README.md", "tests/families/test_softmax.py"]
    needed += ["cs336_staff/fixturegen/__main__.py", "cs336_staff/oracle/__init__.py"]
    needed += ["cs336_staff/catalog/__init__.py", "data/shakespeare_tragedies.txt"]
    assert [name for name in needed if name not in modes] == []
    left_out = ("cs336_basics/", "tests/adapters.py", "tests/fixtures/", "tests/grading/")
    assert [name for name in modes if name.startswith(left_out)] == []
    assert carried_rubric == rubric.read_text()
    assert f"--test-timeout={float(TEST_TIMEOUT)!r}" in run and "--memory-limit=2GiB" in run


@pytest.mark.parametrize("name", ["correct", "wrong_softmax"])
def test_run_autograder_grades_a_submission_as_the_rubric_shows_it(
    package: Path, tmp_path: Path, name: str
):
    submission = synthetic.write_submission(
        tmp_path / name, synthetic.WRONG_SOFTMAX if name == "wrong_softmax" else synthetic.CORRECT
    )
    results = autograde(package, tmp_path / "autograder", submission)
    assert gradescope_problems(results) == []
    assert (results["visibility"], results["stdout_visibility"]) == ("after_due_date", "visible")
    assert results["output"].startswith("```\nsandbox: bubblewrap\ninputs: fresh, drawn for seed")
    assert results["leaderboard"] == [{"name": "Score", "value": results["score"], "order": "desc"}]
    shown = {
        (t["extra_data"]["family"], t["extra_data"]["kind"], t["visibility"])
        for t in results["tests"]
    }
    assert ("softmax", "contract", "hidden") in shown
    assert {v for f, k, v in shown if k == "hardening"} == {"after_published"}
    assert {v for f, k, v in shown if f != "softmax" and k != "hardening"} == {"after_due_date"}
    failed = {t["extra_data"]["family"] for t in results["tests"] if t["status"] == "failed"}
    if name == "correct":
        assert failed == set() and results["score"] == results["max_score"] >= 23
    else:
        # Each failed softmax case costs its share of the family's point (credit per case).
        softmax = [t for t in results["tests"] if t["extra_data"]["family"] == "softmax"
                   and t["extra_data"]["kind"] == "contract"]  # fmt: skip
        lost = sum(t["status"] == "failed" for t in softmax) / len(softmax)
        assert failed == {"softmax"}
        assert results["score"] == pytest.approx(results["max_score"] - lost, abs=1e-5)


def test_a_submission_inside_a_folder_is_not_graded_and_says_why(package: Path, tmp_path: Path):
    synthetic.write_submission(tmp_path / "upload" / "my-assignment", synthetic.CORRECT)
    results = autograde(package, tmp_path / "autograder", tmp_path / "upload")
    assert gradescope_problems(results) == []
    assert results["score"] == 0 and "tests" not in results
    assert "Not graded" in results["output"] and "my-assignment" in results["output"]
    assert results["visibility"] == "after_due_date"


def test_without_the_sandbox_run_autograder_fails_and_writes_no_results(
    package: Path, tmp_path: Path
):
    """What a container that cannot run bubblewrap gets: no score the student did not earn
    (Gradescope reports the autograder's failure), and the grader's reason on stderr."""
    submission = synthetic.write_submission(tmp_path / "alice", synthetic.CORRECT)
    root = tmp_path / "autograder"
    done = run_autograder(package, root, submission, env=without_bwrap(tmp_path))
    assert done.returncode == 2
    assert "cannot grade: the sandbox needs bwrap" in done.stderr
    assert not (root / "results" / "results.json").exists()


def test_a_broken_rubric_builds_no_package(tmp_path: Path):
    rubric = tmp_path / "rubric.toml"
    text = DEFAULT_RUBRIC.read_text()
    rubric.write_text(text.replace('output_format = "text"', 'output_format = "pdf"'))
    built = grade("autograder", "--rubric", rubric, out=tmp_path / "autograder.zip")
    assert built.returncode == 2
    assert "cannot build the autograder" in built.stderr and "output_format" in built.stderr
    assert not (tmp_path / "autograder.zip").exists()


def test_a_handout_builds_no_package(tmp_path: Path):
    export(tmp_path / "handout")
    with pytest.raises(GraderError, match=r"has no cs336_staff, data/shakespeare_tragedies\.txt"):
        build(tmp_path / "autograder.zip", DEFAULT_RUBRIC, [], repo=tmp_path / "handout")
    assert not (tmp_path / "autograder.zip").exists()


def test_a_host_failure_writes_no_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A run that wrote its reports but ended with exit 2 (a worker that could not start
    before any submission code ran scores 0 there): run_autograder leaves no results.json,
    so Gradescope shows staff a failure, not that 0."""

    def main(argv: list[str]) -> int:
        out = Path(argv[argv.index("--out") + 1])
        (out / "results.json").write_text('{"score": 0}')
        return cli.EXIT_GRADER_ERROR

    synthetic.write_submission(tmp_path / "submission", synthetic.CORRECT)
    monkeypatch.setattr(cli, "main", main)
    assert run_autograder_module.grade(tmp_path, []) == cli.EXIT_GRADER_ERROR
    assert not (tmp_path / "results" / "results.json").exists()
