"""The grader's exit status when it cannot run: 2, with a message, before any test runs;
and what it does when the sandbox cannot be set up."""

import subprocess
import sys
from pathlib import Path

from tests.grading import synthetic
from tests.grading.conftest import grade, without_bwrap


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


def test_without_the_sandbox_a_submission_is_not_graded_unless_asked(tmp_path: Path):
    submission = synthetic.write_submission(tmp_path / "alice", synthetic.CORRECT)
    env = without_bwrap(tmp_path)
    refused = grade(submission, "--stored-inputs", out=tmp_path / "refused", env=env)
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert "the sandbox needs bwrap" in line and "--no-sandbox" in line
    assert not (tmp_path / "refused").exists()
    unconfined = grade(
        submission, "--no-sandbox", "--stored-inputs", out=tmp_path / "unconfined", env=env
    )
    assert unconfined.returncode == 0, unconfined.stderr
    results = unconfined.results()
    assert results["score"] == results["max_score"]
    assert results["output"].startswith("sandbox: none (--no-sandbox)")
    assert "sandbox: none (--no-sandbox)" in unconfined.stdout


def test_the_grader_imports_no_torch():
    # The grader only copies, schedules and reads records: torch costs each run 1.5 s of
    # start-up (and the judge and worker import their own).
    check = "import sys, cs336_harness.grading.cli; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


def test_a_worker_that_cannot_start_is_the_hosts_failure_not_a_grade(tmp_path: Path):
    """A memory limit too small to import torch stops every worker before any submission
    code runs: the run exits 2 and names the submissions to grade again, and each report
    says why its tests errored (a 0 there must not stand)."""
    root = tmp_path / "class"
    for name in ("alice", "bob"):
        synthetic.write_submission(root / name, synthetic.CORRECT)
    run = grade(root, "--stored-inputs", "--memory-limit=40M", out=tmp_path / "out")
    assert run.returncode == 2, run.stderr
    assert "not graded, this host failed: 2 of 2 submissions (alice, bob)" in run.stderr
    for name in ("alice", "bob"):
        tests = run.results(name)["tests"]
        assert all("before any of the submission's code had run" in t["output"] for t in tests)
        # The worker's last words say how it failed: torch's libraries could not be mapped,
        # which the limit explains.
        assert "failed to map segment" in tests[0]["output"], tests[0]["output"]
        assert tests[0]["output"].endswith("(memory limit: 40 MiB)"), tests[0]["output"]
