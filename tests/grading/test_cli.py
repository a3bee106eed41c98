"""The grader's exit status when it cannot run: 2, with a message, before any test runs."""

from pathlib import Path

import pytest

from tests.grading.conftest import grade

pytestmark = pytest.mark.grading


def test_a_missing_submission_is_a_grader_error(tmp_path: Path):
    run = grade(tmp_path / "nowhere", out=tmp_path / "out")
    assert run.returncode == 2
    assert "not a directory" in run.stderr


def test_a_directory_without_submissions_is_a_grader_error(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    run = grade(tmp_path / "empty", out=tmp_path / "out")
    assert run.returncode == 2
    assert "neither a submission" in run.stderr


def test_a_broken_rubric_is_a_grader_error(tmp_path: Path):
    rubric = tmp_path / "rubric.toml"
    rubric.write_text("[families]\nlinear = 1\n")
    run = grade("--rubric", rubric, out=tmp_path / "out")
    assert run.returncode == 2
    assert "rubric entry 'linear'" in run.stderr
