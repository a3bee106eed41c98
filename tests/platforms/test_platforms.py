"""The grader on the grading platforms, end to end (`make platforms`, minutes; not in CI):

- GitHub Classroom's reporter, its own JavaScript run with Node, on what the Classroom step
  writes for the bundled implementation and for an RMSNorm without eps: the points it hands
  Classroom and its table are cs336-grade's;
- the staff's grade of record (the class's repositories graded on inputs per student, in
  shards) gives a submission the per-family points of its in-repository Classroom run;
- one submission graded locally, through the Classroom step, through PrairieLearn's entry
  point and through the Gradescope autograder gets the same points and the same words;
- PrairieLearn's entry point in an emulated grading container (`emulate_prairielearn.sh`,
  as root) writes results PrairieLearn accepts, with the points of a local grading on the
  variant's inputs;
- the workflow is YAML, and info.json passes PrairieLearn's own schema for it.

The reporter and PrairieLearn's schema are read from fetched copies (CLASSROOM_REPORTER,
PRAIRIELEARN_REPO); a test whose copy or tool is missing is skipped, saying which."""

from __future__ import annotations

import base64
import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from cs336_harness.grading.inputs.student_inputs import student_seed
from cs336_harness.grading.reports import classroom
from cs336_harness.grading.reports.archive import read_archive
from cs336_harness.grading.scoring import FamilyScore, load_rubric, score
from cs336_harness.paths import REPO_ROOT
from tests.grading import synthetic
from tests.grading.conftest import grade
from tests.grading.test_autograder import run_autograder
from tests.platforms.classroom_reporter import reporter_source, run_reporter
from tests.platforms.prairielearn_results import problems

SEED = 20261
SECRET = "0123456789abcdef0123456789abcdef"
PRAIRIELEARN = Path("/work/.mirror/PrairieLearn+PrairieLearn/repo")
WRONG = REPO_ROOT / "tests" / "evidence" / "wrong" / "rmsnorm_without_eps.py"


def rmsnorm_without_eps() -> synthetic.Synthetic:
    """The bundled implementation with the wrong module's RMSNorm in its adapters."""
    text = WRONG.read_text()
    tail = "\n".join(line for line in text.splitlines() if "from tests.adapters" not in line)
    return synthetic.Synthetic(adapters_tail=tail)


SUBMISSIONS = {"bundled": synthetic.CORRECT, "rmsnorm_without_eps": rmsnorm_without_eps()}
# A softmax without the max shift: its overflow cases fail on every draw, its others pass.
OTHERS = {"wrong_softmax": synthetic.WRONG_SOFTMAX}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("platforms")
    for name, submission in (SUBMISSIONS | OTHERS).items():
        synthetic.write_submission(root / "submissions" / name, submission)
    return root


@pytest.fixture(scope="module")
def drawn(work: Path) -> Path:
    """The inputs of SEED, drawn once: every path below grades on them."""
    command = [sys.executable, "-m", "cs336_harness.grading", "draw", "--seed", str(SEED)]
    subprocess.run([*command, "--out", str(work / "inputs")], check=True, cwd=REPO_ROOT)
    return work / "inputs"


def run_module(module: str, *args: str | Path, cwd: Path = REPO_ROOT, env=None):
    command = [sys.executable, "-m", module, *map(str, args)]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def classroom_step(submission: Path, out: Path, *options: str, cwd: Path = REPO_ROOT):
    """The workflow's Grade step: the runners' results as the reporter gets them."""
    out.parent.mkdir(parents=True, exist_ok=True)
    output = out.parent / f"{out.name}.github_output"
    run_module("cs336_harness.grading.classroom.run_classroom", submission, "--out", out,
               "--github-output", output, *options, cwd=cwd)  # fmt: skip
    lines = output.read_text().splitlines()
    return {n: json.loads(base64.b64decode(v)) for n, _, v in (x.partition("=") for x in lines)}


def family_points(results: dict[str, Any]) -> dict[str, float]:
    """A Gradescope results.json's points per family (hardening as one), its tests' sum."""
    points: dict[str, float] = {}
    for test in results["tests"]:
        data = test["extra_data"]
        key = "hardening" if data["kind"] == "hardening" and "Hardening" in test["name"] else None
        key = key or data["family"]
        points[key] = points.get(key, 0.0) + test["score"]
    return points


def scored_families(out: Path) -> dict[str, FamilyScore]:
    """cs336-grade's own families, scored from the run's grading.json with the rubric."""
    run, [(_, result)] = read_archive(out / "grading.json")
    return {f.family: f for f in score(result, load_rubric(), run["partial"]).families}


def runner_points(runners: dict[str, dict]) -> dict[str, float]:
    return {name: sum(t["score"] for t in r["tests"]) for name, r in runners.items()}


@pytest.mark.parametrize("name", list(SUBMISSIONS))
def test_the_reporters_own_code_prints_the_points_cs336_grade_gives(work: Path, name: str):
    source = reporter_source()
    if source is None:
        pytest.skip("no reporter copy (CLASSROOM_REPORTER) or no node")
    out = work / "classroom-reporter" / name
    runners = classroom_step(work / "submissions" / name, out, "--stored-inputs")
    graded = json.loads((out / "results.json").read_text())
    reported = run_reporter(runners, source)
    print(reported.output)
    assert (reported.total, reported.most) == (graded["score"], graded["max_score"])
    families = scored_families(out)
    rows = dict(zip(classroom.runner_names(load_rubric()), reported.rows, strict=False))
    for runner, (_, shown, most) in rows.items():
        # The table's arithmetic, (passed / tests) * points, against the grader's.
        assert shown == pytest.approx(families[runner].points, rel=1e-12), runner
        assert most == families[runner].max_points
    assert reported.rows[-1][1:] == (graded["score"], graded["max_score"])  # its Total: row
    expected = 64.0 if name == "bundled" else 63.5
    assert graded["score"] == expected
    assert reported.returncode == (0 if name == "bundled" else 1)  # "Some tests failed."


def test_the_grade_of_record_gives_the_points_of_the_in_repository_run(work: Path):
    """Each student's repository is the handout with their implementation in it; the
    Classroom step grades it there, with the harness and fixtures it holds. Staff clone
    the class and grade it on inputs per student, in two shards, merged. A verdict that
    does not depend on the inputs drawn is the same in both, and so are the points; one that
    does can differ (docs/grading.md, "On GitHub Classroom")."""
    handout = work / "handout"
    run_module("cs336_harness.grading.packaging.handout", handout)
    repos = work / "class"
    for student, name in (("alice", "wrong_softmax"), ("bob", "bundled")):
        repo = repos / f"assignment-1-{student}"
        shutil.copytree(handout, repo)
        shutil.rmtree(repo / "cs336_basics")
        shutil.copytree(work / "submissions" / name / "cs336_basics", repo / "cs336_basics")
        shutil.copyfile(work / "submissions" / name / "tests" / "adapters.py",
                        repo / "tests" / "adapters.py")  # fmt: skip
    in_repo = {}
    for student in ("alice", "bob"):
        repo = repos / f"assignment-1-{student}"
        runners = classroom_step(Path("."), work / f"in-repo-{student}", "--stored-inputs",
                                 cwd=repo)  # fmt: skip
        in_repo[student] = runner_points(runners)
    assert in_repo["alice"]["softmax"] < 1 and sum(in_repo["bob"].values()) == 64
    staff = ["--per-student", f"--inputs-secret={SECRET}", "-j2"]
    for shard in (1, 2):
        run = grade(repos, *staff, f"--shard={shard}/2", out=work / f"shard{shard}")
        assert run.returncode == 0, run.stderr
    merged = grade("merge", work / "shard1", work / "shard2", out=work / "merged")
    assert merged.returncode == 0, merged.stderr
    with (work / "merged" / "summary.csv").open() as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    for student, points in in_repo.items():
        name = f"assignment-1-{student}"
        recorded = json.loads((work / "merged" / name / "classroom.json").read_text())
        assert runner_points(recorded) == points, student
        for family, earned in points.items():
            assert float(rows[name][family]) == pytest.approx(earned, abs=1e-6), family
        report = json.loads((work / "merged" / name / "results.json").read_text())
        assert f"inputs: drawn for student '{name}'" in report["output"]


def _lines(results: dict[str, Any]) -> dict[str, str]:
    return {t["name"]: t["output"].split("\n")[0] for t in results["tests"]}


def test_the_same_grade_everywhere(work: Path, drawn: Path, tmp_path: Path):
    """An RMSNorm without eps, on SEED's inputs: cs336-grade here, the Classroom step,
    PrairieLearn's entry point and Gradescope's autograder."""
    submission = work / "submissions" / "rmsnorm_without_eps"
    local = grade(submission, f"--drawn-inputs={drawn}", out=tmp_path / "local")
    assert local.returncode == 0, local.stderr
    here = json.loads((tmp_path / "local" / "results.json").read_text())

    runners = classroom_step(submission, tmp_path / "classroom", f"--drawn-inputs={drawn}")

    root = tmp_path / "grade"
    for name in ("serverFilesCourse", "tests", "data", "student"):
        (root / name).mkdir(parents=True)
    with zipfile.ZipFile(root / "student" / "submission.zip", "w") as archive:
        for path in sorted(submission.rglob("*.py")):
            archive.write(path, path.relative_to(submission).as_posix())
    run_module("cs336_harness.grading.prairielearn.run_prairielearn", root,
               f"--drawn-inputs={drawn}")  # fmt: skip
    learned = json.loads((root / "results" / "results.json").read_text())
    assert problems((root / "results" / "results.json").read_bytes()) == []

    package = tmp_path / "autograder.zip"
    built = grade("autograder", "--inputs=per-assignment", f"--seed={SEED}", out=package)
    assert built.returncode == 0, built.stderr
    done = run_autograder(package, tmp_path / "autograder", submission, drawn)
    assert done.returncode == 0, done.stderr
    scoped = json.loads((tmp_path / "autograder" / "results" / "results.json").read_text())

    families = scored_families(tmp_path / "local")
    assert families["rmsnorm"].points == 0.5 and here["score"] == 63.5
    assert family_points(scoped) == family_points(here) and scoped["score"] == here["score"]
    for name, earned in runner_points(runners).items():
        assert earned == pytest.approx(families[name].points, abs=1e-6), name  # the 2^-20 grid
    assert learned["score"] == pytest.approx(here["score"] / here["max_score"])
    assert learned["cs336"]["points"] == here["score"]
    by_title = {t["name"]: t["points"] for t in learned["tests"]}
    for family in families.values():
        assert by_title[family.title] == family.points, family.family
    # The words: each test's line, the same on every platform.
    said = _lines(here)
    assert _lines(scoped) == said
    told = {t["name"]: t["message"] for r in runners.values() for t in r["tests"]}
    assert told == {name: said[name] for name in told}
    lines = {
        line.split(": ", 1)[0]: line.split(": ", 1)[1]
        for t in learned["tests"]
        for line in t["output"].splitlines()
        if not line[:1].isspace()
    }
    for name, line in said.items():
        assert lines[name.rsplit(": ", 1)[-1]] == line, name


def _emulate(course: Path, upload: Path, label: str, variant: int) -> dict[str, Any]:
    script = REPO_ROOT / "tests" / "platforms" / "emulate_prairielearn.sh"
    work = course.parent / "emulator"
    env = os.environ | {"VARIANT_SEED": str(variant), "WORK": str(work)}
    done = subprocess.run([script, course, upload, label], env=env, capture_output=True,
                          text=True, timeout=900, cwd=REPO_ROOT)  # fmt: skip
    print(done.stdout, (work / "out" / label / "log").read_text()[-4000:])
    assert done.returncode == 0, done.stderr
    assert "exit=0 " in done.stdout and "accepted as PrairieLearn reads" in done.stdout
    return json.loads((work / "out" / label / "results.json").read_text())


@pytest.mark.skipif(os.geteuid() != 0, reason="the emulated container needs root")
def test_prairielearn_in_its_emulated_container(work: Path, tmp_path: Path):
    course = tmp_path / "course"
    made = grade("prairielearn", "--image=course/cs336:2026", f"--inputs-secret={SECRET}",
                 out=course)  # fmt: skip
    assert made.returncode == 0, made.stderr
    submission = work / "submissions" / "rmsnorm_without_eps"
    upload = tmp_path / "submission.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        for path in sorted(submission.rglob("*.py")):
            archive.write(path, path.relative_to(submission).as_posix())
    learned = _emulate(course, upload, "rmsnorm", variant=4321)
    # The same points as cs336-grade gives here on that variant's inputs.
    seed = student_seed(SECRET, "variant:4321")
    local = grade(submission, f"--seed={seed}", out=tmp_path / "local")
    assert local.returncode == 0, local.stderr
    here = json.loads((tmp_path / "local" / "results.json").read_text())
    assert learned["score"] == pytest.approx(here["score"] / here["max_score"])
    assert learned["cs336"]["points"] == here["score"]
    # Which of RMSNorm's tests catch a missing eps depends on the draw: 2 or 3 of 4.
    assert learned["cs336"]["points"] in (63.5, 63.25)
    assert f"seed {seed}" in " ".join(learned["cs336"]["run"])
    assert "user isolation" in " ".join(learned["cs336"]["run"])
    # An upload without a submission: not gradable, the student told why.
    (tmp_path / "notes.txt").write_text("my answers are in the other file")
    nothing = _emulate(course, tmp_path / "notes.txt", "nothing", variant=4321)
    assert nothing["gradable"] is False and "were not found in your upload" in nothing["message"]


def test_the_workflow_is_yaml_and_info_json_passes_prairielearns_schema(tmp_path: Path):
    repo = Path(os.environ.get("PRAIRIELEARN_REPO", PRAIRIELEARN))
    shown = subprocess.run(
        ["git", "-C", str(repo), "show",
         "HEAD:apps/prairielearn/src/schemas/schemas/infoQuestion.json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if shown.returncode != 0 or shutil.which("uv") is None:
        pytest.skip("no PrairieLearn copy (PRAIRIELEARN_REPO), or no uv")
    (tmp_path / "infoQuestion.json").write_text(shown.stdout)
    for command in (["classroom"], ["prairielearn", "--image=course/cs336:2026"]):
        made = grade(*command, out=tmp_path / command[0])
        assert made.returncode == 0, made.stderr
    info = tmp_path / "prairielearn" / "questions" / "cs336_assignment1" / "info.json"
    # Not this project's dependencies: brought for this one process.
    read = subprocess.run(
        ["uv", "run", "--with", "pyyaml", "--with", "jsonschema", "python", "-m",
         "tests.platforms.platform_files", tmp_path / "classroom", info,
         tmp_path / "infoQuestion.json"],
        capture_output=True, text=True, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    names = classroom.runner_names(load_rubric())
    found = json.loads(read.stdout.splitlines()[-1])
    assert found == {
        "runners": ",".join(names),
        "env": sorted(f"{n.upper()}_RESULTS" for n in names),
    }
