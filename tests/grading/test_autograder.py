"""`cs336-grade autograder`: the Gradescope package, built, unpacked and run as Gradescope
runs it, on submissions in an /autograder-shaped tree (AUTOGRADER_ROOT). Not setup.sh,
which installs system packages and downloads a Python and torch: run_autograder uses this
environment (AUTOGRADER_PYTHON), and the inputs are drawn here as setup.sh draws them.
`/work/shared/gradescope/emulate.sh` runs the whole of it in an emulated Gradescope image."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from cs336_harness.grading import cli
from cs336_harness.grading.environments.courses import COURSE_2026, from_table
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.gradescope import run_autograder as run_autograder_module
from cs336_harness.grading.inputs.student_inputs import student_seed
from cs336_harness.grading.intake.submissions import find_in_upload
from cs336_harness.grading.intake.upload import not_found, to_grade
from cs336_harness.grading.packaging.autograder import (
    MATRIX_TORCH,
    SECRET_FILE,
    build,
    image_for,
    locked_torch,
    unchecked_torch,
)
from cs336_harness.grading.packaging.handout import export
from cs336_harness.grading.reports.archive import write_archive
from cs336_harness.grading.results import GradedTest, Status, SubmissionResult
from cs336_harness.grading.sandbox import container
from cs336_harness.grading.sandbox.container import fit_memory
from cs336_harness.grading.scoring import DEFAULT_RUBRIC, load_rubric, score
from cs336_harness.paths import REPO_ROOT
from tests.grading import handed_in, synthetic
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
    # Drawn once, in setup.sh: the tests below grade many runs (per student: its own test).
    built = grade("autograder", "--rubric", rubric, *limits, "--inputs=per-assignment", out=path)
    assert built.returncode == 0, built.stderr
    return path


def _setup_line(package: Path, name: str) -> str:
    """The value setup.sh gives `name` (its first lines hold the course's choices)."""
    setup = zipfile.ZipFile(package).read("setup.sh").decode()
    return "".join(shlex.split(re.search(rf"^{name}=(.*)$", setup, re.MULTILINE)[1]))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, package: Path) -> Path:
    """The inputs setup.sh draws, once, for the seed the package holds."""
    dest = tmp_path_factory.mktemp("drawn") / "inputs"
    seed = _setup_line(package, "SEED")
    command = [sys.executable, "-m", "cs336_harness.grading", "draw", "--seed", seed]
    # A relative --out, from the folder it is in, as setup.sh draws them.
    subprocess.run([*command, "--out", "inputs"], check=True, capture_output=True, cwd=dest.parent)
    return dest


def metadata(users: list[int]) -> str:
    """A submission_metadata.json as Gradescope writes it, for a submission by `users`."""
    return json.dumps(
        {
            "id": 123456,
            "created_at": "2026-01-20T14:22:32.365935-08:00",
            "assignment": {"due_date": "2026-01-28T23:59:00.000000-08:00", "title": "A1"},
            "submission_method": "upload",
            "users": [{"email": f"s{u}@example.edu", "id": u, "name": f"S {u}"} for u in users],
            "previous_submissions": [],
        }
    )


def run_autograder(
    package: Path,
    root: Path,
    submission: Path,
    inputs: Path | None,
    env: dict[str, str] | None = None,
    users: tuple[int, ...] = (1234,),
) -> subprocess.CompletedProcess[str]:
    """Lay out `root` as Gradescope's /autograder, as setup.sh leaves it (the inputs drawn,
    unless each run draws its own), and run its run_autograder there for `users`."""
    with zipfile.ZipFile(package) as archive:
        archive.extractall(root / "source")
        for info in archive.infolist():  # extractall drops the Unix permissions
            (root / "source" / info.filename).chmod(info.external_attr >> 16)
    if inputs is not None:
        (root / "source" / "inputs").symlink_to(inputs, target_is_directory=True)
    shutil.copyfile(root / "source" / "run_autograder", root / "run_autograder")
    (root / "run_autograder").chmod(0o755)
    shutil.copytree(submission, root / "submission")
    if not (root / "submission_metadata.json").exists():  # a test's own, else Gradescope's
        (root / "submission_metadata.json").write_text(metadata(list(users)))
    env = (env or dict(os.environ)) | {
        "AUTOGRADER_ROOT": str(root),
        "AUTOGRADER_PYTHON": sys.executable,
    }
    return subprocess.run(
        [root / "run_autograder"], cwd=root, env=env, capture_output=True, text=True, timeout=900
    )


def autograde(package: Path, root: Path, submission: Path, inputs: Path) -> dict[str, Any]:
    """run_autograder's results.json, from a run that completed."""
    done = run_autograder(package, root, submission, inputs)
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
    # Gradescope's default timeout, 600 s, less the margin; the inputs setup.sh drew.
    assert "--deadline=555 --drawn-inputs inputs" in run
    # The image: uv and Python pinned, uv.lock's torch as a CPU-only build, a seed for all.
    assert [_setup_line(package, name) for name in ("UV_VERSION", "PYTHON", "TORCH")] == [
        "0.13.9",
        "3.12",
        f"torch=={locked_torch()}",
    ]
    assert _setup_line(package, "TORCH_BACKEND") == "cpu"
    assert re.fullmatch(r"\d+", _setup_line(package, "SEED"))


# A course's own environment on a torch no cell of .ci/matrix.py checks (the CPU-only wheel
# the emulation of Gradescope has), with a package uv.lock lacks.
OWN_TORCH = {
    "python": "3.11",
    "torch": "~=2.13.0",
    "packages": [*COURSE_2026.packages, "omegaconf>=2"],
}


def test_the_image_installs_the_course_s_torch_and_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """uv.lock's torch exactly where the course's admits it; any other as the rubric writes
    it, with a warning that the harness is not checked on it; the course's packages that
    uv.lock lacks beside its own. What the image cannot hold is refused in one line."""
    spec = importlib.util.spec_from_file_location("matrix", REPO_ROOT / ".ci" / "matrix.py")
    matrix = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "matrix", matrix)  # its dataclasses look themselves up
    spec.loader.exec_module(matrix)
    checked = {c.torch.removeprefix("torch==").removesuffix(".*") for c in matrix.CELLS if c.torch}
    assert set(MATRIX_TORCH) == checked
    memory = container.GRADESCOPE_MEMORY
    image = image_for(COURSE_2026, cuda=False, memory=memory)
    assert (image.python, image.torch, image.packages) == ("3.12", f"torch=={locked_torch()}", ())
    assert unchecked_torch(COURSE_2026) == ""
    own = from_table(OWN_TORCH, "rubric")
    image = image_for(own, cuda=True, memory=2 << 30, seed=None)
    build(tmp_path / "a.zip", DEFAULT_RUBRIC, [], image=image)
    assert _setup_line(tmp_path / "a.zip", "TORCH") == "torch~=2.13.0"
    setup = zipfile.ZipFile(tmp_path / "a.zip").read("setup.sh").decode()
    assert "\nPACKAGES=('omegaconf>=2')\n" in setup  # a bash array, installed beside torch
    assert _setup_line(tmp_path / "a.zip", "PYTHON") == "3.11"
    assert _setup_line(tmp_path / "a.zip", "TORCH_BACKEND") == ""
    assert _setup_line(tmp_path / "a.zip", "SEED") == ""  # drawn per submission
    run = zipfile.ZipFile(tmp_path / "a.zip").read("run_autograder").decode()
    assert "run_autograder --cuda " in run  # its workers' memory is the CUDA build's
    assert unchecked_torch(own) == (
        "warning: the harness is not checked on torch 2.13 (it is on 2.6, 2.11, 2.15: "
        ".ci/matrix.py and uv.lock); the autograder installs it as asked (the rubric's "
        "[environment]: Python 3.11, torch~=2.13.0): grade a few submissions with "
        "Gradescope's Test Autograder before the class does"
    )
    for table, refused in [
        ({**OWN_TORCH, "packages": ["numpy<2"]}, "asks for numpy<2, but the grader runs on "),
        ({**OWN_TORCH, "python": "3.14"}, "it needs Python 3.11 to 3.13"),
    ]:
        with pytest.raises(GraderError, match=re.escape(refused)):
            image_for(from_table(table, "rubric"), cuda=False, memory=memory)


def test_an_image_that_cannot_grade_in_the_container_s_memory_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    """--memory is the assignment's container memory: PyPI's CUDA build (each process that
    imports torch holds 125 MB more) is refused at Gradescope's default 768 MB, in one line
    naming what it needs, and accepted with that much."""
    needed = container.CUDA.needed
    assert cli.main(["autograder", "--cuda", "--out", str(tmp_path / "a.zip")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(
        "cs336-grade: cannot build the autograder: the container's memory (768 MiB) is below "
        f"what grading with PyPI's CUDA build of torch needs ({needed >> 20} MiB: "
    )
    assert line.endswith(f"then build with --memory {needed >> 20}MiB, or leave out --cuda "
                         "(the CPU-only build fits in 720 MiB)")  # fmt: skip
    assert not (tmp_path / "a.zip").exists()
    asked = cli.parse_autograder(["--cuda", "--memory", f"{needed >> 20}M"])
    assert image_for(asked.grading.course, asked.cuda, asked.memory).memory == needed
    with pytest.raises(GraderError, match=r"memory \(600 MiB\) is below what grading with "):
        image_for(COURSE_2026, cuda=False, memory=600 << 20)


def test_a_course_s_own_torch_builds_from_the_rubric_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    """A rubric [environment] of a torch .ci/matrix.py does not check builds as written,
    with a one-line warning; --python and --torch that agree with it are accepted."""
    rubric = tmp_path / "rubric.toml"
    text = DEFAULT_RUBRIC.read_text()
    own = '[environment]\npython = "3.11"\ntorch = "~=2.13.0"\n'
    rubric.write_text(text[: text.rindex("[environment]")] + own)
    zipped = tmp_path / "a.zip"
    assert cli.main(["autograder", "--rubric", str(rubric), "--out", str(zipped)]) == 0
    said = capsys.readouterr().out
    assert "warning: the harness is not checked on torch 2.13" in said, said
    assert _setup_line(zipped, "TORCH") == "torch~=2.13.0"
    asked = cli.parse_autograder(["--rubric", str(rubric), "--python", "3.11", "--torch", "2.13"])
    assert asked.grading.course.torch == "~=2.13.0"


@pytest.mark.parametrize("name", ["correct", "wrong_softmax"])
def test_run_autograder_grades_a_submission_as_the_rubric_shows_it(
    package: Path, inputs: Path, tmp_path: Path, name: str
):
    """On the inputs drawn for the package's seed; for students to read: how the run was
    made goes to extra_data, and no path of the grader's shows."""
    submission = synthetic.write_submission(
        tmp_path / name, synthetic.WRONG_SOFTMAX if name == "wrong_softmax" else synthetic.CORRECT
    )
    results = autograde(package, tmp_path / "autograder", submission, inputs)
    assert gradescope_problems(results) == []
    assert (results["visibility"], results["stdout_visibility"]) == ("after_due_date", "visible")
    seed = _setup_line(package, "SEED")
    assert results["extra_data"]["run"][:2] == [
        "sandbox: bubblewrap",
        f"inputs: drawn once for seed {seed} (cs336-grade draw; regrade on them: --seed {seed})",
    ]
    shown = json.dumps([results["output"], *(t["output"] for t in results["tests"])])
    assert "sandbox" not in shown and "resources" not in shown and "/tmp" not in shown
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
        # One statement of each failure: its first line is not repeated below it (the
        # outputs are Markdown code blocks, per the rubric).
        for test in results["tests"]:
            lines = test["output"].removeprefix("```\n").removesuffix("\n```").splitlines()
            message = lines[0].split(": ", 1)[-1]
            assert all(message not in line for line in lines[1:]), test["output"]


def test_each_student_is_graded_on_inputs_of_their_own(rubric: Path, tmp_path: Path):
    """The default package: each run draws its student's inputs from the zip's secret, which
    no path of the run shows; two students (a group, whichever member submits) get two."""
    package = tmp_path / "autograder.zip"
    limits = (f"--test-timeout={TEST_TIMEOUT}", f"--memory-limit={MEMORY_LIMIT}")
    built = grade("autograder", "--rubric", rubric, *limits, out=package)
    assert built.returncode == 0, built.stderr
    secret = zipfile.ZipFile(package).read(SECRET_FILE).decode().strip()
    assert len(secret) == 32 and "inputs per student" in built.stdout
    assert _setup_line(package, "SEED") == "" and _setup_line(package, "PER_STUDENT") == "1"
    submission = synthetic.write_submission(tmp_path / "submission", synthetic.CORRECT)
    lines = {}
    for users in [(1234,), (99, 7)]:
        root = tmp_path / f"autograder-{users[0]}"
        done = run_autograder(package, root, submission, None, users=users)
        assert done.returncode == 0, done.stderr
        results = json.loads((root / "results" / "results.json").read_text())
        assert results["score"] == results["max_score"]
        seed = student_seed(secret, f"gradescope:{','.join(map(str, sorted(users)))}")
        lines[users] = results["extra_data"]["run"][1]
        assert f"seed {seed} (regrade on them: --seed {seed})" in lines[users]
        assert secret not in done.stdout + json.dumps(results)
    assert lines[(1234,)].startswith("inputs: drawn for Gradescope user 1234, seed")
    assert lines[(99, 7)].startswith("inputs: drawn for Gradescope group of users 7, 99, seed")


def test_a_run_without_its_student_is_not_graded(rubric: Path, tmp_path: Path):
    """Without users in submission_metadata.json there is no student to draw for: the
    run says it did not grade (staff read why), it does not grade on someone else's
    inputs."""
    package = tmp_path / "autograder.zip"
    assert grade("autograder", "--rubric", rubric, out=package).returncode == 0
    submission = synthetic.write_submission(tmp_path / "submission", synthetic.CORRECT)
    root = tmp_path / "autograder"
    done = run_autograder(package, root, submission, None, users=())
    assert done.returncode == 0
    assert "not graded:" in done.stderr and "users is not a list" in done.stderr
    assert not_graded_problems(root, "setup") == []


def _upload(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_submission_is_found_in_what_the_student_uploaded(tmp_path: Path):
    """A zip of the folder holding it (macOS adds __MACOSX), a whole repository, the files
    themselves: found. Anything else gets one line that says what to upload."""
    files = {"cs336_basics/__init__.py": "", "tests/adapters.py": ""}
    mac = {f"__MACOSX/a1/{k}": "" for k in files} | {f"a1/{k}": "" for k in files}
    mac_upload = _upload(tmp_path / "mac", mac)
    assert find_in_upload(mac_upload) == [mac_upload / "a1"]
    repo = _upload(tmp_path / "repo", files | {"README.md": "", "tests/test_model.py": ""})
    assert find_in_upload(repo) == [repo]
    deep = _upload(tmp_path / "deep", {f"x/y/{k}": "" for k in files})
    assert find_in_upload(deep) == [deep / "x" / "y"]
    two = _upload(tmp_path / "two", {f"{d}/{k}": "" for d in ("a", "b") for k in files})
    assert not_found(two, find_in_upload(two)) == (
        "Not graded: your upload holds 2 submissions (a/, b/): upload one."
    )
    text = _upload(tmp_path / "text", {"answers.txt": ""})
    assert not_found(text, find_in_upload(text)) == (
        "Not graded: your cs336_basics/ folder and tests/adapters.py were not found in your "
        "upload (it holds answers.txt): upload them, or a zip of them."
    )


def test_an_upload_holding_one_archive_is_graded_on_it(tmp_path: Path):
    """Gradescope unpacks a zip uploaded alone; not one inside a folder (make_submission.sh's
    zip in the folder that holds it, as a repository submitted from GitHub has it), nor a
    tarball. One archive and no submission: the archive is graded (the grader unpacks it);
    several, or one of a kind it cannot unpack, get one line."""
    files = {"cs336_basics/__init__.py": "", "tests/adapters.py": ""}
    zipped = _upload(tmp_path / "zipped", {"a1/cs336-submission.zip": "", "a1/README.md": ""})
    _upload(zipped, {"__MACOSX/a1/._cs336-submission.zip": ""})
    assert to_grade(zipped) == zipped / "a1" / "cs336-submission.zip"
    tarred = _upload(tmp_path / "tarred", {"a1.tar.gz": ""})
    assert to_grade(tarred) == tarred / "a1.tar.gz"
    both = _upload(tmp_path / "both", files | {"old.zip": ""})  # a submission wins
    assert to_grade(both) == both
    two = _upload(tmp_path / "two", {"a.zip": "", "b/b.tar.gz": ""})
    assert to_grade(two) == (
        "Not graded: your upload holds 2 archives (a.zip, b/b.tar.gz) and no submission: "
        "upload one of them, or your cs336_basics/ folder and tests/adapters.py themselves."
    )
    rar = _upload(tmp_path / "rar", {"submission.rar": ""})
    assert to_grade(rar) == (
        "Not graded: your upload holds submission.rar, an archive the grader does not unpack "
        "(it unpacks .zip, .tar, .tar.gz, .tgz, .tar.bz2, .tar.xz): upload your cs336_basics/ "
        "folder and tests/adapters.py themselves, or a zip of them."
    )


def test_run_autograder_grades_a_tarball_in_the_upload(package: Path, inputs: Path, tmp_path: Path):
    """A student's tarball of a checkout, uploaded in a folder: unpacked by the grader,
    every point. A zip bomb beside nothing else: 0, and one line that says why."""
    checkout = handed_in.write_checkout(tmp_path / "assignment1-basics")
    upload = tmp_path / "upload" / "handin"
    upload.mkdir(parents=True)
    handed_in.tarball(checkout, upload / "assignment1.tar.gz")
    upload = upload.parent
    results = autograde(package, tmp_path / "autograder", upload, inputs)
    assert gradescope_problems(results) == []
    assert results["score"] == results["max_score"] > 0
    bomb = tmp_path / "bomb"
    bomb.mkdir()
    handed_in.tar_bomb(bomb / "a1.tar.gz")
    results = autograde(package, tmp_path / "bombed", bomb, inputs)
    assert results["score"] == 0
    # The first line of the output (a Markdown block, as this rubric asks).
    said = "```\nEvery test failed the same way: not graded: a1.tar.gz: unpacks to more than 256"
    assert results["output"].startswith(said)


def test_a_worker_memory_limit_fits_the_container():
    """Beside the grader's own processes: a submission that allocates too much fails in its
    own call, not by the kernel killing a process of the grader's for the container. The
    CUDA build's worker may map what its libraries never touch."""
    options = ["--test-timeout=30.0", "--memory-limit=4GiB"]
    cpu, cuda = container.CPU, container.CUDA
    assert fit_memory(options, None, needs=cpu) is options
    assert fit_memory(options, 768 << 20, needs=cpu) == [*options, f"--memory-limit={368 << 20}"]
    assert fit_memory(["--memory-limit=100MiB"], 768 << 20, needs=cpu) == ["--memory-limit=100MiB"]
    assert fit_memory(options, 512 << 20, needs=cpu) == (
        "the container's memory (512 MiB) is below what grading with PyTorch's CPU-only build "
        "needs (720 MiB: a submission's worker 320 MiB beside the grader's 400 MiB): raise it "
        "to at least 720 MiB (Gradescope: the assignment's Autograder settings, container "
        "memory)"
    )
    cap = cuda.needed - cuda.trusted + cuda.untouched
    assert fit_memory(options, cuda.needed, needs=cuda) == [*options, f"--memory-limit={cap}"]
    assert "raise it to at least" in fit_memory(options, 768 << 20, needs=cuda)


def test_without_bubblewrap_the_user_tier_grades_and_says_so(
    package: Path, inputs: Path, tmp_path: Path
):
    """What Gradescope's container gets (it refuses bubblewrap's namespaces; here bwrap is
    missing): as root, the sandbox's user tier, named where staff read it."""
    if os.geteuid() != 0:
        pytest.skip("the user tier drops from root")
    submission = synthetic.write_submission(tmp_path / "alice", synthetic.CORRECT)
    root = tmp_path / "autograder"
    done = run_autograder(package, root, submission, inputs, env=without_bwrap(tmp_path))
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == results.get("max_score"), done.stderr
    assert "sandbox: user isolation" in "\n".join(results["extra_data"]["run"])


def not_graded_problems(root: Path, kind: str) -> list[str]:
    """How ROOT/results/results.json departs from a run that says it did not grade, for
    `kind`: Gradescope's fields, that its code is not the cause, what staff change, and
    nothing of the grader's (no path, no log)."""
    results = json.loads((root / "results" / "results.json").read_text())
    problems = gradescope_problems(results)
    said = results["output"].removeprefix("```\n").removesuffix("\n```")  # a Markdown rubric
    if results["extra_data"]["not_graded"]["kind"] != kind:
        problems.append(f"kind {results['extra_data']['not_graded']} is not {kind}")
    if not said.startswith("Not graded: the autograder could not grade this submission ("):
        problems.append(f"it does not open with not graded: {said!r}")
    if "Nothing in your code caused it" not in said or "For course staff: " not in said:
        problems.append(f"it does not clear the student or tell staff: {said!r}")
    if "/" in said.replace("/autograder", "") or "Traceback" in said:
        problems.append(f"it shows the grader's paths or logs: {said!r}")
    return problems


def test_without_a_sandbox_run_autograder_writes_that_it_did_not_grade(
    rubric: Path, inputs: Path, tmp_path: Path
):
    """A package that insists on bubblewrap, where there is none: no score the student did
    not earn, but results.json says the autograder's setup failed, and staff read why in
    its output."""
    package = tmp_path / "autograder.zip"
    built = grade(
        "autograder", "--rubric", rubric, "--sandbox=bubblewrap", "--inputs=per-assignment",
        out=package,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    submission = synthetic.write_submission(tmp_path / "alice", synthetic.CORRECT)
    root = tmp_path / "autograder"
    done = run_autograder(package, root, submission, inputs, env=without_bwrap(tmp_path))
    assert done.returncode == 0
    assert "cannot grade: the sandbox needs bwrap" in done.stderr
    assert not_graded_problems(root, "setup") == []


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


def test_a_run_that_cannot_grade_says_so_and_what_staff_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Every run writes a results.json: a container below what grading needs (600 MiB), a
    broken rubric, a grader that stops (exit 2, no reports), a worker that could not start
    (exit 2, its reports say so: `test_cli.py` makes one), a process the kernel stopped for
    the container's memory, an error of the grader's own. Each says that the
    submission was not graded, that its code is not the cause, and what staff change; the
    error goes to stderr, for staff. Nothing is graded here."""
    synthetic.write_submission(tmp_path / "submission", synthetic.CORRECT)
    results = tmp_path / "results" / "results.json"

    def stops(argv: list[str]) -> int:
        return cli.EXIT_GRADER_ERROR

    def broken(argv: list[str]) -> int:
        raise KeyError("a bug")

    def host_fails(argv: list[str]) -> int:
        """As a run whose worker could not start: reports that say so, and exit 2."""
        cannot = "the worker could not start, before any of the submission's code had run"
        test = GradedTest("t.py::t", "softmax", Status.ERROR, cannot, host_failure=True)
        result = SubmissionResult("submission", Path("submission"), (test,), "", 1.0, 1)
        graded = score(result, load_rubric(DEFAULT_RUBRIC), partial=True)
        write_archive([graded], Path(argv[argv.index("--out") + 1]) / "grading.json", {}, [0])
        return cli.EXIT_GRADER_ERROR

    # This host's own kills (its cgroup's count, which a test that ran out of memory raises
    # until the machine restarts) decide none of the cases before the one about them.
    monkeypatch.setattr(container, "oom_kills", lambda: 0)
    monkeypatch.setattr(container, "memory_limit", lambda: 600 << 20)
    assert run_autograder_module.grade(tmp_path, []) == 0
    assert not_graded_problems(tmp_path, "memory") == []
    output = json.loads(results.read_text())["output"]
    assert "(its container has too little memory: 600 MiB)" in output
    assert "raise the assignment's container memory to at least 720 MiB" in output
    monkeypatch.setattr(container, "memory_limit", lambda: 768 << 20)
    rubric = tmp_path / "rubric.toml"
    rubric.write_text("[scoring]\ncredit = 'half'\n")
    assert run_autograder_module.grade(tmp_path, [], rubric_path=rubric) == 0
    assert not_graded_problems(tmp_path, "rubric") == []
    monkeypatch.setattr(cli, "main", stops)
    assert run_autograder_module.grade(tmp_path, []) == 0
    assert not_graded_problems(tmp_path, "setup") == []
    monkeypatch.setattr(cli, "main", host_fails)
    assert run_autograder_module.grade(tmp_path, []) == 0
    assert not_graded_problems(tmp_path, "host") == []
    monkeypatch.setattr(container, "oom_kills", lambda: 1)
    assert run_autograder_module.grade(tmp_path, []) == 0
    assert not_graded_problems(tmp_path, "memory") == []
    assert "container memory above it" in json.loads(results.read_text())["output"]
    monkeypatch.setattr(cli, "main", broken)
    assert run_autograder_module.main([str(tmp_path)]) == 0
    assert not_graded_problems(tmp_path, "setup") == []


def test_the_course_policies_apply_from_gradescopes_metadata(
    package: Path, rubric: Path, inputs: Path, tmp_path: Path
):
    """The rubric's [policy] (2 submissions per 24 hours, 10 % off per started day late),
    from a submission_metadata.json as Gradescope writes it: a late run loses 20 % and
    says so; the next, over the cap, is not graded and keeps that grade, its tests marked,
    and says when a submission counts again. Both named in results.json."""
    policy = tmp_path / "rubric.toml"
    policy.write_text(rubric.read_text() + "\n[policy]\nmax_submissions = 2\nlate_penalty = 0.1\n")
    seed = _setup_line(package, "SEED")  # the same inputs, drawn once by the fixture
    with_policy = tmp_path / "autograder.zip"
    limits = (f"--test-timeout={TEST_TIMEOUT}", f"--memory-limit={MEMORY_LIMIT}")
    built = grade(
        "autograder", "--rubric", policy, "--inputs=per-assignment", "--seed", seed, *limits,
        out=with_policy,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    submission = synthetic.write_submission(tmp_path / "alice", synthetic.CORRECT)

    def metadata(created_at: str, previous: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": 1,
            "created_at": created_at,
            "assignment": {"due_date": "2026-01-28T23:59:00.000000-08:00", "late_due_date": None},
            "users": [{"email": "alice@example.edu", "id": 1234, "name": "Alice"}],
            "previous_submissions": previous,
            "submission_method": "upload",
        }

    def run(root: Path, data: dict[str, Any]) -> dict[str, Any]:
        root.mkdir()
        (root / "submission_metadata.json").write_text(json.dumps(data))
        return autograde(with_policy, root, submission, inputs)

    first = {"submission_time": "2026-01-29T20:00:00-08:00", "score": 30.0, "results": {}}
    late_at = "2026-01-30T03:00:00.000000-08:00"
    late = run(tmp_path / "late", metadata(late_at, [first]))
    assert gradescope_problems(late) == []
    assert late["score"] == pytest.approx(0.8 * late["max_score"], abs=1e-5)
    assert late["output"].startswith(
        "```\nLate: submitted 1 d 3 h 1 min after the due date (2026-01-29 07:59 UTC): 20% off "
        "the score (2 started days at 10% each)"
    )
    assert "Submissions: 0 of 2 left" in late["output"]
    assert late["extra_data"]["policy"]["late"]["fraction"] == 0.2

    previous = [first, {"submission_time": late_at, "score": late["score"], "results": late}]
    capped = run(tmp_path / "capped", metadata("2026-01-30T04:00:00-08:00", previous))
    assert gradescope_problems(capped) == []
    assert capped["score"] == late["score"]
    assert capped["output"].startswith(
        "```\nNot graded: 2 of your submissions in the last 24 hours count already, the most "
        "the course allows (2 in any 24 hours). Your next submission counts from 2026-01-31 "
        "04:00 UTC, in 16 h 0 min.\nYour grade stays that of your submission of 2026-01-30 "
        f"11:00 UTC: {late['score']:g} points, its results below.\nLate: submitted 1 d 3 h 1 min "
        "after the "
        "due date"
    )
    record = capped["extra_data"]["policy"]
    assert (record["counted"], record["reason"]) == (False, "over the cap")
    assert [t["name"] for t in capped["tests"]] == [t["name"] for t in late["tests"]]
    assert {t["extra_data"]["kept_from"] for t in capped["tests"]} == {"2026-01-30T03:00:00-08:00"}


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--torch", "2.15"], "torch 2.15"),
        (["--course", "2025", "--python", "3.13"], "Python 3.13"),
    ],
)
def test_an_image_that_is_not_the_course_s_environment_is_refused(
    capsys: pytest.CaptureFixture[str], args: list[str], named: str
):
    """Submissions run in the course's environment: an image of another torch or Python
    would have every run build it again, in a container without the time or the network."""
    with pytest.raises(SystemExit) as exited:
        cli.parse_autograder(args)
    assert exited.value.code == 2
    [line] = [ln for ln in capsys.readouterr().err.splitlines() if "error:" in ln]
    assert named in line and "is not the environment of course 20" in line
    assert (
        cli.parse_autograder(["--course", "2025", "--torch", "2.6"]).grading.course.name == "2025"
    )
