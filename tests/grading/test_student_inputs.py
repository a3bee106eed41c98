"""Inputs per student: a student's seed from the assignment's secret and who they are, the
same for every resubmission, another for every other student, and two students' draws
sharing no case; a class graded `--per-student`, each report naming its own seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.gradescope.metadata import gradescope_student
from cs336_harness.grading.gradescope.run_autograder import student_inputs
from cs336_harness.grading.inputs.student_inputs import named_student, student_seed
from tests.grading import synthetic
from tests.grading.conftest import GradingRun, grade


def test_a_student_s_seed_is_stable_and_no_one_else_s():
    alice = named_student("alice").key
    assert student_seed("s3cret", alice) == student_seed("s3cret", alice)
    seeds = {student_seed("s3cret", named_student(f"student{i}").key) for i in range(1000)}
    assert len(seeds) == 1000
    assert student_seed("another", alice) != student_seed("s3cret", alice)
    assert all(0 <= s < 2**31 for s in seeds)


def test_a_gradescope_submission_s_student_is_its_users_and_a_group_its_members(
    tmp_path: Path,
):
    path = tmp_path / "submission_metadata.json"

    def student(users: object) -> str:
        metadata = {"users": users, "created_at": "2026-01-20T14:22:32Z", "assignment": {}}
        path.write_text(json.dumps(metadata))
        return gradescope_student(path).key

    one = student([{"id": 1234, "name": "A"}])
    assert one == "gradescope:1234"
    # A group, whichever member submits: its members' ids, in order.
    group = student([{"id": 1234, "email": "b@x"}, {"id": 99, "email": "a@x"}])
    assert group == student([{"id": 99}, {"id": 1234}]) == "gradescope:99,1234"
    assert gradescope_student(path).description == "Gradescope group of users 99, 1234"
    for broken, why in (([], "users is not a list"), ([{"name": "no id"}], "is not an integer")):
        with pytest.raises(ValueError, match=why):
            student(broken)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="is not JSON"):
        gradescope_student(path)


def _draw(seed: int, dest: Path) -> Path:
    command = [sys.executable, "-m", "cs336_staff.fixturegen", "--quiet"]
    subprocess.run([*command, "--seed", str(seed), "--out", str(dest)], check=True)
    return dest


def _case_inputs(fixtures: Path) -> dict[str, dict[str, object]]:
    """Each case's inputs (every tensor but the expected ones, its params, and the shared
    weights it names), by family/id."""
    table = json.loads((fixtures / "cases.json").read_text())
    found = {}
    for family, entries in table.items():
        tensors = load_file(str(fixtures / f"{family}.safetensors"))
        for entry in entries:
            prefix = f"{entry['id']}/"
            own = {k: v for k, v in tensors.items() if k.startswith(prefix)}
            own = {k: v for k, v in own.items() if not k[len(prefix) :].startswith("expected")}
            if "weights_file" in entry["params"]:
                shared = load_file(str(fixtures / entry["params"]["weights_file"]))
                own |= {f"shared/{k}": v for k, v in shared.items()}
            found[f"{family}/{entry['id']}"] = {"params": entry["params"], **own}
    return found


def _same(a: dict[str, object], b: dict[str, object]) -> bool:
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        other = b[key]
        if isinstance(value, torch.Tensor):
            same = value.shape == other.shape and value.dtype == other.dtype
            if not (same and torch.equal(value, other)):
                return False
        elif value != other:
            return False
    return True


def test_two_students_draws_share_no_case(tmp_path: Path):
    """No case of one student's inputs is another's: answers computed for one are worth
    nothing to the other (some tensors, positions 0..n-1 or a causal mask, are the same in
    every draw; every case has an input of its own)."""
    seeds = [student_seed("s3cret", named_student(name).key) for name in ("alice", "bob")]
    alice, bob = (_case_inputs(_draw(s, tmp_path / str(s))) for s in seeds)
    assert alice.keys() == bob.keys()
    shared = [case for case in alice if _same(alice[case], bob[case])]
    assert shared == []


def _with_cache(run_root: Path) -> dict[str, str]:
    """The environment of a run whose grader keeps its cache under `run_root`."""
    return os.environ | {"XDG_CACHE_HOME": str(run_root / "cache")}


def _kept_tables(run_root: Path) -> dict[str, int]:
    """The known mistakes' tables kept in that cache: each one's inode, by name."""
    folder = run_root / "cache" / "cs336-grade" / "diagnosis"
    return {path.name: path.stat().st_ino for path in folder.glob("*.safetensors")}


@pytest.fixture(scope="module")
def class_run(tmp_path_factory: pytest.TempPathFactory) -> GradingRun:
    root = tmp_path_factory.mktemp("per-student")
    synthetic.write_submission(root / "submissions" / "alice", synthetic.CORRECT)
    synthetic.write_submission(root / "submissions" / "bob", synthetic.WRONG_SOFTMAX)
    args = ("-j2", "--per-student", "--inputs-secret=s3cret")
    return grade(root / "submissions", *args, out=root / "out", env=_with_cache(root))


def _inputs_line(results: dict[str, object]) -> str:
    return results["output"].splitlines()[1]


def test_each_submission_is_graded_on_its_student_s_inputs(class_run: GradingRun):
    assert class_run.returncode == 0, class_run.stderr
    summary = class_run.summary()
    for name in ("alice", "bob"):
        seed = student_seed("s3cret", named_student(name).key)
        results = class_run.results(name)
        assert summary[name]["seed"] == str(seed)
        assert _inputs_line(results) == (
            f"inputs: drawn for student {name!r}, seed {seed} (regrade on them: --seed {seed})"
        )
    assert "inputs: per student" in class_run.stdout
    alice, bob = class_run.results("alice"), class_run.results("bob")
    assert alice["score"] == alice["max_score"] > bob["score"]


def test_a_resubmission_is_graded_on_the_same_inputs(class_run: GradingRun, tmp_path: Path):
    """Bob's next submission, alone, under another folder name he is named for: his inputs'
    table of softmax's known mistakes is read from the grader's cache, not computed again
    (computed, it would be written to a new file under the same name). Alice fails nothing,
    and her inputs got no table."""
    kept = _kept_tables(class_run.out.parent)
    assert len(kept) == 1  # bob's softmax
    again = synthetic.write_submission(tmp_path / "resubmitted", synthetic.WRONG_SOFTMAX)
    args = ("--per-student", "--inputs-secret=s3cret", "--student=bob")
    run = grade(again, *args, out=tmp_path / "out", env=_with_cache(class_run.out.parent))
    assert run.returncode == 0, run.stderr
    assert _inputs_line(run.results()) == _inputs_line(class_run.results("bob"))
    assert "likely cause: softmax" in json.dumps(run.results())
    assert _kept_tables(class_run.out.parent) == kept


def test_per_student_options_say_what_they_need(tmp_path: Path):
    run = grade(tmp_path, "--inputs-secret=x", out=tmp_path / "out")
    assert run.returncode == 2 and "--inputs-secret and --student are for --per-student" in (
        run.stderr
    )


def test_a_secret_other_users_can_read_is_refused(tmp_path: Path):
    """Where setup.sh did not close it, the submission's own user could read the secret and
    work out every classmate's inputs: the run stops before drawing."""
    metadata = {"users": [{"id": 1}], "created_at": "2026-01-20T14:22:32Z", "assignment": {}}
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata))
    secret = tmp_path / "inputs_secret"
    secret.write_text("s3cret\n")
    secret.chmod(0o644)
    with pytest.raises(GraderError, match=r"open to other users \(mode 644\)"):
        student_inputs(tmp_path, secret, tmp_path / "inputs")
