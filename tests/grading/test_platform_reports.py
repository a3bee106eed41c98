"""The reports the grading platforms read, from scored results (no grading run: seconds):
GitHub Classroom's reporter input, PrairieLearn's results.json, and the words every report
gives a test; the platforms' entry points around a grading, and what `cs336-grade classroom`
and `cs336-grade prairielearn` write. `make platforms` runs them all end to end."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from cs336_harness.grading import cli, run
from cs336_harness.grading.classroom import run_classroom
from cs336_harness.grading.environments.courses import COURSES
from cs336_harness.grading.packaging import classroom_workflow, prairielearn_course
from cs336_harness.grading.prairielearn import run_prairielearn
from cs336_harness.grading.reports import CLASSROOM, PRAIRIELEARN, classroom, prairielearn
from cs336_harness.grading.reports.archive import write_archive
from cs336_harness.grading.reports.gradescope import results_json
from cs336_harness.grading.results import HARDENING, GradedTest, Status, SubmissionResult
from cs336_harness.grading.scoring import (
    DEFAULT_RUBRIC,
    Gradescope,
    RubricError,
    Score,
    load_rubric,
    score,
)
from tests.platforms.prairielearn_results import problems

TRIVIAL = "an optimizer that changes nothing resumes exactly"
FORGED = '::notice title=Autograding report::{"totalPoints":64,"maxPoints":64}'


def _tests() -> list[GradedTest]:
    """rope: 2 of 3 (2 points: 4/3 earned); rmsnorm: 7 of 7 (1 point, in sevenths);
    checkpointing: a trivial pass beside a failure (nothing earned); a hardening test of rope
    that fails; a family beyond the rubric, implemented."""
    rope = [GradedTest(f"tests/families/test_rope.py::test_rope[{i}]", "rope", Status.PASSED)
            for i in range(2)]  # fmt: skip
    rope.append(
        GradedTest(
            "tests/families/test_rope.py::test_rope[offset]", "rope", Status.FAILED,
            f"likely cause: positions ignored {FORGED}", f"where ##[add-mask]x\n{FORGED}",
        )
    )  # fmt: skip
    rmsnorm = [
        GradedTest(f"tests/families/test_rmsnorm.py::test_rmsnorm[{i}]", "rmsnorm", Status.PASSED)
        for i in range(7)
    ]
    resume = "tests/families/test_checkpointing.py::test_resume"
    checkpointing = [
        GradedTest(f"{resume}[a]", "checkpointing", Status.PASSED, trivial=TRIVIAL),
        GradedTest(f"{resume}[b]", "checkpointing", Status.TIMED_OUT, "call exceeded its 30 s"),
    ]
    hardening = GradedTest("tests/families/test_rope.py::test_rope[no_positions]", "rope",
                           Status.FAILED, "raised TypeError", kind=HARDENING)  # fmt: skip
    gelu = GradedTest("tests/families/test_gelu.py::test_gelu[a]", "gelu", Status.PASSED)
    return [*rope, *rmsnorm, *checkpointing, hardening, gelu]


def _scored(tests: list[GradedTest] | None = None, partial: bool = True, rubric=None) -> Score:
    submission = SubmissionResult("alice", Path("/s/alice"), tuple(tests or _tests()), "", 1.0, 1)
    return score(submission, rubric or load_rubric(), partial)


def _reporter_points(results: dict) -> tuple[float, float]:
    """What GitHub Classroom records: the reporter's NotifyClassroom sums every test's score
    over the runners with a max_score, adding in order as JavaScript does (a double)."""
    total, most = 0.0, 0.0
    for result in results.values():
        if not result["max_score"]:
            continue
        most += result["max_score"]
        for test in result["tests"]:
            total += test["score"]
    return total, most


def _reporter_row(result: dict) -> float:
    """The reporter's table: a runner scores its share of tests with status "pass" times its
    max_score (getTestScore in its src/helpers/test-helpers.js)."""
    passed = sum(t["status"] == "pass" for t in result["tests"])
    return passed / len(result["tests"]) * (result["max_score"] or 0)


def test_each_runner_scores_its_family_as_cs336_grade_does_in_both_readings_of_the_reporter():
    result = _scored()
    runners = classroom.runner_results(result, load_rubric())
    assert list(runners) == classroom.runner_names(load_rubric())
    families = {f.family: f for f in result.families}
    assert families["rope"].points == pytest.approx(4 / 3)
    for name in ("rope", "rmsnorm", "checkpointing", HARDENING):
        runner = runners[name]
        assert runner["max_score"] == families[name].max_points
        assert sum(t["score"] for t in runner["tests"]) == pytest.approx(families[name].points)
        assert _reporter_row(runner) == pytest.approx(families[name].points)
    assert [t["status"] for t in runners["checkpointing"]["tests"]] == ["fail", "fail"]
    assert runners["checkpointing"]["tests"][0]["message"].startswith("passed, for no points")
    assert (runners["rope"]["status"], runners["rmsnorm"]["status"]) == ("fail", "pass")
    # The hardening tests are apart: worth the rubric's 0, so they fail no run.
    assert runners[HARDENING]["status"] == "pass" and runners[HARDENING]["max_score"] == 0
    # A family without tests here is graded for nothing, and never a table of NaN.
    assert runners["linear"]["max_score"] == 0 and runners["linear"]["tests"]
    points, most = _reporter_points(runners)
    assert points == pytest.approx(result.points, abs=1e-6)
    assert most == result.max_points


def test_whole_points_stay_whole_in_the_reporters_running_sum():
    # 1/7, 4/3 and 15/24 of a point do not add up exactly as doubles; on the grid they do.
    tests = [GradedTest(f"t::test_tokenizer[{i}]", "tokenizer", Status.PASSED) for i in range(24)]
    tests += [GradedTest(f"t::test_rmsnorm[{i}]", "rmsnorm", Status.PASSED) for i in range(7)]
    tests += [GradedTest(f"t::test_rope[{i}]", "rope", Status.PASSED) for i in range(3)]
    runners = classroom.runner_results(_scored(tests), load_rubric())
    assert _reporter_points(runners)[0] == 18.0
    plain = 0.0
    for _ in range(7):  # added one by one, as JavaScript adds (Python's sum() compensates)
        plain += 1 / 7
    assert plain == 0.9999999999999998  # what the grid avoids


def test_all_or_nothing_credit_passes_no_test_of_a_family_that_earns_nothing():
    result = _scored(partial=False)
    runners = classroom.runner_results(result, load_rubric())
    assert {t["status"] for t in runners["rope"]["tests"]} == {"fail"}
    assert runners["rope"]["tests"][0]["message"].startswith("passed (the family earns")
    assert _reporter_row(runners["rope"]) == 0 == sum(t["score"] for t in runners["rope"]["tests"])
    assert _reporter_row(runners["rmsnorm"]) == 1.0
    assert _reporter_points(runners)[0] == result.points


def test_one_runner_for_the_assignment_records_the_same_points(tmp_path: Path):
    text = DEFAULT_RUBRIC.read_text().replace('runners = "family"', 'runners = "assignment"')
    (tmp_path / "rubric.toml").write_text(text)
    rubric = load_rubric(tmp_path / "rubric.toml")
    assert classroom.runner_names(rubric) == ["assignment", HARDENING]
    result = _scored(rubric=rubric)
    runners = classroom.runner_results(result, rubric)
    assert _reporter_points(runners) == pytest.approx((result.points, result.max_points))
    assert runners["assignment"]["max_score"] == result.max_points


def test_a_rubric_names_runners_family_or_assignment(tmp_path: Path):
    text = DEFAULT_RUBRIC.read_text().replace('runners = "family"', 'runners = "test"')
    (tmp_path / "rubric.toml").write_text(text)
    with pytest.raises(RubricError, match=r"\[classroom\]: runners must be one of family"):
        load_rubric(tmp_path / "rubric.toml")


def test_text_from_a_submission_issues_no_workflow_command_when_the_reporter_prints_it():
    runners = classroom.runner_results(_scored(), load_rubric())
    failed = runners["rope"]["tests"][2]
    for text in (failed["message"], failed["test_code"]):
        assert "##[" not in text
        assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]
    assert "\\x3a:notice title=Autograding report::" in failed["test_code"]
    assert "uv run pytest 'tests/families/test_rope.py::test_rope[offset]'" in failed["test_code"]
    assert failed["line_no"] == 0  # else the reporter prints "line undefined"


def test_every_runner_fits_in_one_environment_variable_and_all_of_them_in_a_command():
    long = "y" * 4000
    tests = [GradedTest(f"t::test_x[{i:03d}]", "tokenizer", Status.FAILED, "z" * 300, long)
             for i in range(300)]  # fmt: skip
    tests += [GradedTest(f"t::test_h[{i:03d}]", "rope", Status.FAILED, "z" * 300, long,
                         kind=HARDENING) for i in range(300)]  # fmt: skip
    outputs = classroom.step_outputs(classroom.runner_results(_scored(tests), load_rubric()))
    values = [line.partition("=")[2] for line in outputs.splitlines()]
    assert max(len(v) for v in values) <= 128 << 10
    assert sum(len(v) for v in values) <= 1 << 20
    decoded = json.loads(base64.b64decode(values[-2]))  # tokenizer, cut, each test still named
    assert len(decoded["tests"]) == 300 and decoded["tests"][0]["message"]


def test_a_submission_not_graded_gets_an_error_on_every_runner_worth_its_points():
    rubric = load_rubric()
    runners = classroom.not_graded(rubric, "not graded: the grader could not run")
    assert list(runners) == classroom.runner_names(rubric)
    assert {r["status"] for r in runners.values()} == {"error"}
    assert _reporter_points(runners) == (0.0, 64.0)


def test_the_workflow_hands_every_runner_the_grader_writes_to_the_reporter():
    rubric = load_rubric()
    text = classroom_workflow.workflow(rubric, ["--test-timeout=60.0"])
    names = classroom.runner_names(rubric)
    assert f"          runners: {','.join(names)}\n" in text
    for name in names:
        assert f'{name.upper()}_RESULTS: "${{{{ steps.grade.outputs.{name} }}}}"' in text
    assert "run_classroom . --stored-inputs --test-timeout=60.0\n" in text
    assert classroom_workflow.REPORTER in text


def _messages(result: Score) -> dict[str, dict[str, str]]:
    """Platform → test name → the line it gives that test."""
    gradescope = results_json(result, Gradescope(), [], for_students=True)["tests"]
    runners = classroom.runner_results(result, load_rubric())
    learn = prairielearn.results(result, [], for_students=True)["tests"]
    lines = [line for t in learn for line in t["output"].splitlines() if not line[:1].isspace()]
    return {
        "gradescope": {t["name"]: t["output"].split("\n")[0] for t in gradescope},
        "classroom": {t["name"]: t["message"] for r in runners.values() for t in r["tests"]},
        "prairielearn": dict(line.split(": ", 1) for line in lines),
    }


def test_every_platform_gives_each_test_the_same_words_and_each_family_the_same_points():
    tests = [t for t in _tests() if FORGED not in t.message]  # no line the reporter escapes
    tests.append(GradedTest("t::test_rope[x]", "rope", Status.FAILED, "likely cause: Θ ignored"))
    result = _scored(tests)
    said = _messages(result)
    in_rubric = [t for f in result.families for t in f.tests]
    for family in result.families:
        for test in family.tests:
            name = f"{test.family}: {test.name}" if family.family == HARDENING else test.name
            full = f"{family.title}: {name}"
            assert said["gradescope"][full] == said["classroom"][full]
            assert said["prairielearn"][test.name] == said["gradescope"][full]
    assert in_rubric
    gradescope = results_json(result, Gradescope(), [], for_students=True)["tests"]
    learn = {t["name"]: t["points"] for t in prairielearn.results(result)["tests"]}
    runners = classroom.runner_results(result, load_rubric())
    for family in result.families:
        hardening = family.family == HARDENING
        shares = [
            t["score"]
            for t in gradescope
            if (t["extra_data"]["kind"] == HARDENING) == hardening
            and (hardening or t["extra_data"]["family"] == family.family)
        ]
        assert sum(shares) == pytest.approx(family.points, abs=1e-5)
        assert learn[family.title] == family.points
        assert sum(t["score"] for t in runners[family.family]["tests"]) == pytest.approx(
            family.points, abs=1e-6
        )


def test_prairielearn_results_are_what_prairielearn_accepts_and_add_up_to_the_score():
    result = _scored()
    document = prairielearn.results(result, ["sandbox: x"], for_students=True)
    assert problems(json.dumps(document).encode()) == []
    assert document["score"] == pytest.approx(result.points / result.max_points)
    assert sum(t["points"] for t in document["tests"]) == pytest.approx(result.points)
    assert sum(t["max_points"] for t in document["tests"]) == result.max_points
    beyond = [t for t in document["tests"] if "beyond the rubric" in t["name"]]
    assert [t["max_points"] for t in beyond] == [0.0]
    assert "sandbox: x" not in document["output"] and document["cs336"]["run"] == ["sandbox: x"]
    assert document["message"].startswith(f"{result.points:g} of {result.max_points:g} points")


def test_prairielearn_results_stay_under_its_1_mb():
    long = "y" * 4000
    tests = [GradedTest(f"t::test_x[{i:03d}]", "tokenizer", Status.FAILED, "z" * 300, long)
             for i in range(400)]  # fmt: skip
    data = json.dumps(prairielearn.results(_scored(tests)), ensure_ascii=False).encode()
    assert len(data) <= prairielearn.MAX_BYTES
    assert problems(data) == []


@pytest.mark.parametrize(
    "document, wrong",
    [
        ({"score": 1.5}, "score 1.5 is not a number from 0 to 1"),
        ({"gradable": True}, "score None"),
        ({"score": 1, "tests": [{"name": "a", "points": 1}]}, "max_points is missing"),
        ({"gradable": False, "format_errors": 3}, "format_errors is neither"),
    ],
)
def test_the_prairielearn_check_refuses_what_prairielearn_would(document: dict, wrong: str):
    assert any(wrong in problem for problem in problems(json.dumps(document).encode()))


def test_a_submission_that_cannot_be_graded_is_not_gradable_for_prairielearn():
    document = prairielearn.not_gradable("Not graded: no zip in your upload.")
    assert problems(json.dumps(document).encode()) == []
    assert document["gradable"] is False and document["format_errors"]


def _fake_grading(result: Score, status: int, monkeypatch: pytest.MonkeyPatch) -> list[list]:
    """cs336-grade replaced by one that writes `result`'s reports and exits `status`."""
    calls = []

    def main(argv: list[str]) -> int:
        calls.append(argv)
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        if status != cli.EXIT_GRADER_ERROR:
            runners = classroom.runner_results(result, load_rubric())
            (out / CLASSROOM).write_text(json.dumps(runners))
            (out / PRAIRIELEARN).write_text(json.dumps(prairielearn.results(result)))
            write_archive([result], out / "grading.json", {}, [0])
        return status

    monkeypatch.setattr(cli, "main", main)
    return calls


def _step_outputs(path: Path) -> dict[str, dict]:
    lines = path.read_text().splitlines()
    return {n: json.loads(base64.b64decode(v)) for n, _, v in (x.partition("=") for x in lines)}


def test_the_classroom_step_hands_the_reporter_every_runner_with_commands_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    result = _scored()
    calls = _fake_grading(result, run.EXIT_OK, monkeypatch)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    output = tmp_path / "github_output"
    status = run_classroom.grade(Path("."), ["--stored-inputs"], tmp_path / "g", output)
    assert status == 0 and calls[0][0] == "." and "--stored-inputs" in calls[0]
    assert _step_outputs(output) == classroom.runner_results(result, load_rubric())
    printed = capsys.readouterr().out.splitlines()
    token = printed[0].removeprefix("::stop-commands::")
    assert len(token) == 32 and f"::{token}::" in printed
    assert f"{result.points:g} of {result.max_points:g} points" in printed[-1]


def test_a_classroom_step_whose_grader_cannot_run_reports_an_error_on_every_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    _fake_grading(_scored(), cli.EXIT_GRADER_ERROR, monkeypatch)
    output = tmp_path / "github_output"
    assert run_classroom.grade(Path("."), [], tmp_path / "g", output) == 0
    runners = _step_outputs(output)
    assert list(runners) == classroom.runner_names(load_rubric())
    assert {r["status"] for r in runners.values()} == {"error"}
    assert "could not run" in runners["rope"]["tests"][0]["message"]


def _grade_root(tmp_path: Path) -> Path:
    """A /grade as PrairieLearn lays it out, its course files open to all (as git and
    PrairieLearn's copies leave them)."""
    root = tmp_path / "grade"
    for name in ("serverFilesCourse/cs336", "tests", "student", "data"):
        (root / name).mkdir(parents=True)
    secret = root / "serverFilesCourse" / "cs336" / "inputs_secret"
    secret.write_text("s3cret\n")
    secret.chmod(0o644)
    (root / "data" / "data.json").write_text(json.dumps({"variant_seed": 77, "params": {}}))
    return root


def _learned(root: Path) -> dict:
    document = json.loads((root / "results" / "results.json").read_text())
    assert problems((root / "results" / "results.json").read_bytes()) == []
    return document


def test_prairielearn_grades_an_upload_into_its_results_and_keeps_the_course_files_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = _grade_root(tmp_path)
    (root / "student" / "cs336_basics").mkdir()
    result = _scored()
    calls = _fake_grading(result, run.EXIT_OK, monkeypatch)
    assert run_prairielearn.grade(root, ["--seed=5"]) == 0
    assert calls[0][0] == str(root / "student") and "--for-students" in calls[0]
    assert _learned(root) == prairielearn.results(result)
    for path in [root / "serverFilesCourse", *(root / "serverFilesCourse").rglob("*"),
                 root / "data" / "data.json"]:  # fmt: skip
        assert stat.S_IMODE(os.lstat(path).st_mode) & 0o077 == 0, path


@pytest.mark.parametrize("status", [cli.EXIT_GRADER_ERROR, None])
def test_prairielearn_is_told_a_submission_was_not_graded_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int | None
):
    root = _grade_root(tmp_path)
    if status is None:  # nothing to grade in the upload: the student's to fix
        (root / "student" / "notes.txt").write_text("hi")
        document = (run_prairielearn.grade(root, []), _learned(root))[1]
        assert "cs336_basics/ folder and tests/adapters.py were not found" in document["message"]
    else:  # the grader could not run: the course's to fix
        (root / "student" / "cs336_basics").mkdir()
        _fake_grading(_scored(), status, monkeypatch)
        assert run_prairielearn.grade(root, []) == 0
        document = _learned(root)
        assert document["message"] == run_prairielearn.NOT_GRADED
    assert document["gradable"] is False


def test_an_upload_the_intake_refuses_is_not_gradable_and_a_graded_error_is_graded():
    refused = GradedTest("t::a", "rope", Status.ERROR, "not graded: a.zip: holds no submission")
    submission = SubmissionResult("a", Path("/a"), (refused, refused), "", 0.1, 0)
    assert run_prairielearn.refusal(submission) == "Not graded: a.zip: holds no submission"
    # Its own code ran (a worker started): a failure it earned, however it is worded.
    ran = SubmissionResult("a", Path("/a"), (refused,), "", 0.1, 1)
    assert run_prairielearn.refusal(ran) == ""


def test_the_variant_names_the_inputs(tmp_path: Path):
    root = _grade_root(tmp_path)
    assert run_prairielearn.variant_key(root) == "variant:77"
    (root / "data" / "data.json").write_text(json.dumps({"variant_seed": "77"}))
    with pytest.raises(Exception, match="has no variant_seed"):
        run_prairielearn.variant_key(root)


def test_prairielearn_course_files_hold_the_question_the_package_and_the_image(tmp_path: Path):
    course = COURSES["2026"]
    question = prairielearn_course.Question(course, "me/cs336:2026", 300, secret="abc")
    prairielearn_course.build(tmp_path / "pl", DEFAULT_RUBRIC, ["--test-timeout=60.0"], question)
    folder = tmp_path / "pl"
    info = json.loads((folder / "questions" / "cs336_assignment1" / "info.json").read_text())
    assert {"uuid", "type", "title", "topic"} <= set(info) and info["gradingMethod"] == "External"
    options = info["externalGradingOptions"]
    # The keys PrairieLearn's infoQuestion schema allows there (a strict object).
    allowed = {"comment", "enabled", "image", "entrypoint", "serverFilesCourse", "timeout",
               "enableNetworking", "environment"}  # fmt: skip
    assert set(options) <= allowed and options["timeout"] == 300
    assert options["entrypoint"] == "/grade/serverFilesCourse/cs336/run_prairielearn"
    package = folder / "serverFilesCourse" / "cs336"
    run = (package / "run_prairielearn").read_text()
    assert "--per-variant inputs_secret" in run and "--test-timeout=60.0 --deadline=270" in run
    assert (package / "cs336_staff").is_dir() and (package / "rubric.toml").is_file()
    assert (package / "inputs_secret").read_text() == "abc\n"
    dockerfile = (folder / "image" / "Dockerfile").read_text()
    assert f"FROM python:{course.python}-slim-bookworm" in dockerfile
    assert "torch==2.11" in dockerfile and (folder / "image" / "uv.lock").is_file()
    with pytest.raises(FileExistsError):
        prairielearn_course.build(folder, DEFAULT_RUBRIC, [], question)
