"""The course's submission policies on Gradescope (the rubric's `[policy]`), on synthetic
submission_metadata.json shaped as Gradescope's docs and the emulator write it: the reader,
the cap on submissions per window, the late penalty, and run_autograder applying them."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cs336_harness.grading import cli
from cs336_harness.grading.gradescope import run_autograder as run_autograder_module
from cs336_harness.grading.gradescope.metadata import METADATA, MetadataError, parse, read
from cs336_harness.grading.gradescope.policy import (
    RECORD,
    RunPolicy,
    counted_before,
    duration,
    lateness,
)
from cs336_harness.grading.reports.gradescope import document
from cs336_harness.grading.scoring import (
    DEFAULT_RUBRIC,
    Gradescope,
    RubricError,
    SubmissionPolicy,
    load_rubric,
)
from tests.grading import synthetic

PACIFIC = "-08:00"
DUE = f"2026-01-28T23:59:00.000000{PACIFIC}"
CAP = SubmissionPolicy(max_submissions=3, window_hours=24)
SETTINGS = Gradescope()


def at(day: int, hour: int, minute: int = 0) -> str:
    """A Gradescope date in January 2026, Pacific time."""
    return f"2026-01-{day:02d}T{hour:02d}:{minute:02d}:00.000000{PACIFIC}"


def iso(time: str) -> str:
    """`time` as the records write it (Python's isoformat)."""
    return datetime.fromisoformat(time).isoformat()


def metadata(
    created_at: str = at(20, 14),
    *,
    due: str | None = DUE,
    late_due: str | None = None,
    users: list[dict[str, Any]] | None = None,
    previous: list[dict[str, Any]] = (),
) -> dict[str, Any]:
    """submission_metadata.json as Gradescope writes it (the emulator's fields)."""
    return {
        "id": 123456,
        "created_at": created_at,
        "assignment": {
            "due_date": due,
            "group_size": 1,
            "group_submission": False,
            "id": 25828,
            "course_id": 1234,
            "late_due_date": late_due,
            "release_date": at(7, 0),
            "title": "Assignment 1: Basics",
            "total_points": "60.0",
        },
        "submission_method": "upload",
        "users": users or [{"email": "s1234@example.edu", "id": 1234, "name": "Student 1234"}],
        "previous_submissions": list(previous),
    }


def graded_results(score: float, name: str = "test_linear") -> dict[str, Any]:
    """A results.json as the grader writes one, with one test."""
    test = {"name": name, "score": score, "max_score": 1.0, "status": "passed", "output": "ok"}
    return document(score, "assignment rules: none found", SETTINGS, max_score=64.0) | {
        "extra_data": {"rules": {"penalty": 0.0}},
        "tests": [test],
    }


def earlier(time: str, score: float | None = 10.0, results: dict | None = None, **flags) -> dict:
    entry = {"submission_time": time, "score": score, "results": results or {}}
    return entry | flags


def policy_for(data: dict[str, Any], policy: SubmissionPolicy = CAP) -> RunPolicy:
    return RunPolicy(policy, parse(data))


# The reader.


def test_the_emulators_metadata_reads_as_gradescope_documents_it():
    """The fields the emulator writes (/work/shared/gradescope/emulate.sh), with two
    earlier submissions, one of them made after this one (a regrade lists it)."""
    data = metadata(
        at(20, 14),
        previous=[
            earlier(at(21, 9), 30.0),
            earlier(at(19, 8), 20.0, graded_results(20.0)),
            earlier(at(18, 8), None, autograder_error=True),
        ],
    )
    read_back = parse(data)
    assert read_back.created_at == datetime.fromisoformat(at(20, 14))
    assert read_back.due == datetime.fromisoformat(DUE) and read_back.late_due is None
    assert read_back.user_ids == (1234,)
    assert [p.submitted_at.day for p in read_back.previous] == [18, 19]
    assert [p.errored for p in read_back.previous] == [True, False]
    assert read_back.previous[1].results["tests"][0]["name"] == "test_linear"
    assert read_back.previous[0].results is None


def test_a_users_own_dates_take_precedence_and_a_group_gets_its_latest():
    """Gradescope lists each user's dates (with an extension) beside the assignment's."""
    alone = metadata(
        late_due=at(30, 23),
        users=[{"id": 7, "assignment": {"due_date": at(29, 23), "late_due_date": None}}],
    )
    assert parse(alone).due == datetime.fromisoformat(at(29, 23))
    assert parse(alone).late_due is None  # their own: no late period
    group = metadata(
        late_due=at(30, 23),
        users=[
            {"id": 88, "assignment": {"due_date": at(29, 23)}},
            {"id": 9, "name": "no extension"},
            {"id": 40, "assignment": {"due_date": at(28, 12), "late_due_date": at(31, 23)}},
        ],
    )
    read_back = parse(group)
    assert read_back.due == datetime.fromisoformat(at(29, 23))
    assert read_back.late_due == datetime.fromisoformat(at(31, 23))
    assert read_back.user_ids == (9, 40, 88)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("created_at"), r"^created_at is not a date: None$"),
        (lambda d: d.update(created_at="2026-01-20T14:22:32"), r"^created_at has no time zone"),
        (lambda d: d.update(created_at="yesterday"), r"^created_at is not an ISO 8601 date"),
        (lambda d: d.update(assignment=[]), r"^assignment is not an object$"),
        (lambda d: d["assignment"].update(due_date=5), r"^assignment\.due_date is not a date"),
        (lambda d: d.update(users=[]), r"^users is not a list"),
        (lambda d: d["users"][0].update(id=True), r"^users\[0\]\.id is not an integer: True$"),
        (lambda d: d.update(previous_submissions={}), r"^previous_submissions is not a list$"),
        (
            lambda d: d["previous_submissions"].append(earlier(at(19, 1), "a lot")),
            r"^previous_submissions\[0\]\.score is not a number: 'a lot'$",
        ),
        (
            lambda d: d["previous_submissions"].append(earlier(at(19, 1), float("nan"))),
            r"^previous_submissions\[0\]\.score is not a number",
        ),
    ],
)
def test_malformed_metadata_is_refused_in_one_line_naming_the_field(change, message):
    data = metadata()
    change(data)
    with pytest.raises(MetadataError, match=message):
        parse(data)


def test_a_missing_or_unreadable_file_is_a_metadata_error(tmp_path: Path):
    with pytest.raises(MetadataError, match=r"^cannot read .*submission_metadata\.json"):
        read(tmp_path / METADATA)
    (tmp_path / METADATA).write_text("{")
    with pytest.raises(MetadataError, match=r"submission_metadata\.json is not JSON"):
        read(tmp_path / METADATA)
    (tmp_path / METADATA).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(MetadataError, match=r"is not JSON"):
        read(tmp_path / METADATA)
    (tmp_path / METADATA).write_text(json.dumps(metadata()))
    assert read(tmp_path / METADATA).user_ids == (1234,)


# The rubric's [policy] table.


def test_the_policy_is_off_by_default_and_read_from_the_rubric(tmp_path: Path):
    assert load_rubric().policy == SubmissionPolicy() and not SubmissionPolicy().active
    rubric = tmp_path / "rubric.toml"
    text = DEFAULT_RUBRIC.read_text()
    rubric.write_text(text.replace("max_submissions = 0", "max_submissions = 5"))
    assert load_rubric(rubric).policy == SubmissionPolicy(max_submissions=5)
    rubric.write_text(text.replace('late_penalty_per = "day"', 'late_penalty_per = "week"'))
    with pytest.raises(RubricError, match=r"late_penalty_per must be one of day, hour, once"):
        load_rubric(rubric)
    for wrong, says in [
        ("late_penalty = 1.5", r"late_penalty must be a number between 0 and 1, got 1\.5"),
        ("max_submissions = 2.5", r"max_submissions must be a whole number"),
        ("max_submissions = -1", r"max_submissions must be a number ≥ 0"),
        ("window_hours = 0", r"window_hours must be more than 0"),
        ("window = 24", r"\[policy\] may hold only max_submissions, window_hours"),
    ]:
        rubric.write_text(text[: text.index("[policy]")] + f"[policy]\n{wrong}\n")
        with pytest.raises(RubricError, match=says):
            load_rubric(rubric)


# The cap.


def test_errored_and_uncounted_runs_do_not_count():
    """No score, Gradescope's autograder_error, or results whose record says the run did
    not count (over the cap, nothing graded): only the rest count."""
    capped = graded_results(10.0) | {"extra_data": {RECORD: {"counted": False}}}
    data = metadata(
        at(20, 14),
        previous=[
            earlier(at(20, 8)),
            earlier(at(20, 9), None),
            earlier(at(20, 10), 0.0, autograder_error=True),
            earlier(at(20, 11)),
            earlier(at(20, 12), 10.0, capped),
        ],
    )
    assert [t.hour for t in counted_before(parse(data))] == [8, 11]
    assert not policy_for(data).over_the_cap


def test_the_window_rolls_with_the_submissions_time():
    """Counted within the 24 hours before created_at (never the clock's now, so a rerun
    gives the same answer); the next one counts when the oldest of those leaves it."""
    data = metadata(
        at(20, 14),
        # The first, 24 hours before this one to the microsecond, has left the window.
        previous=[earlier(at(19, 14)), earlier(at(19, 15)), earlier(at(20, 1)), earlier(at(20, 2))],
    )
    policy = policy_for(data)
    assert [t.hour for t in policy.in_window] == [15, 1, 2] and policy.over_the_cap
    report = policy.capped(SETTINGS)
    record = report["extra_data"][RECORD]
    assert record["submissions"]["next_counts_at"] == iso(at(20, 15))  # 19th 15:00 + 24 h
    assert report["output"].startswith(
        "Not graded: 3 of your submissions in the last 24 hours count already, the most the "
        "course allows (3 in any 24 hours). Your next submission counts from 2026-01-20 23:00 "
        "UTC, in 1 h 0 min."
    )
    assert not policy_for(data, SubmissionPolicy(max_submissions=3, window_hours=12)).over_the_cap


def test_over_the_cap_the_last_counted_grade_stands_marked_as_kept():
    kept = graded_results(42.5)
    data = metadata(at(20, 14), previous=[earlier(at(20, h), 42.5) for h in (8, 9)])
    data["previous_submissions"].append(earlier(at(20, 10), 42.5, kept))
    report = policy_for(data).capped(SETTINGS)
    assert report["score"] == 42.5 and report["max_score"] == 64.0
    assert [t["name"] for t in report["tests"]] == ["test_linear"]
    assert report["tests"][0]["extra_data"] == {"kept_from": iso(at(20, 10))}
    assert report["extra_data"]["rules"] == {"penalty": 0.0}
    record = report["extra_data"][RECORD]
    assert (record["counted"], record["reason"], record["kept_from"]) == (
        False,
        "over the cap",
        iso(at(20, 10)),
    )
    lines = report["output"].splitlines()
    assert lines[1] == (
        "Your grade stays that of your submission of 2026-01-20 18:00 UTC: 42.5 points, its "
        "results below."
    )
    assert lines[-1] == "assignment rules: none found"  # the kept run's own output


def test_capped_runs_chain_without_counting_or_stacking():
    """A run over the cap, read back as the latest earlier submission (Gradescope gives its
    results only), keeps the same grade, and its ledger still counts the three."""
    first = metadata(
        at(20, 14),
        previous=[
            earlier(at(20, 8)),
            earlier(at(20, 9)),
            earlier(at(20, 10), 10.0, graded_results(10.0)),
        ],
    )
    capped = policy_for(first).capped(SETTINGS)
    second = metadata(
        at(20, 15),
        previous=[
            earlier(at(20, 8)),
            earlier(at(20, 9)),
            earlier(at(20, 10)),
            earlier(at(20, 14), capped["score"], capped),
        ],
    )
    policy = policy_for(second)
    assert len(policy.in_window) == 3 and policy.over_the_cap
    again = policy.capped(SETTINGS)
    assert again["score"] == 10.0 and again["tests"] == capped["tests"]
    assert again["extra_data"][RECORD]["kept_from"] == iso(at(20, 10))
    assert again["output"].count("Not graded") == 1
    assert again["output"].endswith("assignment rules: none found")


def test_the_ledger_counts_what_gradescope_no_longer_shows():
    """Runs before the latest earlier one come without results: a capped one among them
    would look counted, but the latest run's ledger says which counted."""
    ledger = {"counted": True, "counted_at": [at(20, 8), at(20, 12)]}
    latest = graded_results(10.0) | {"extra_data": {RECORD: ledger}}
    previous = [
        earlier(at(20, 8)),
        earlier(at(20, 9)),
        earlier(at(20, 10)),
        earlier(at(20, 12), 10.0, latest),
    ]
    policy = policy_for(metadata(at(20, 14), previous=previous))
    assert [t.hour for t in policy.in_window] == [8, 12] and not policy.over_the_cap
    report = policy.graded(graded_results(12.0))
    record = report["extra_data"][RECORD]
    assert record["counted_at"] == [iso(at(20, h)) for h in (8, 12, 14)]
    assert record["submissions"] | {"next_counts_at": None} == {
        "max": 3,
        "window_hours": 24.0,
        "counted": 3,
        "left": 0,
        "next_counts_at": None,
    }
    assert report["output"].splitlines()[0] == (
        "Submissions: 0 of 3 left (3 count in any 24 hours; this one counted): your next "
        "submission counts from 2026-01-21 16:00 UTC, in 18 h 0 min; one made before then is "
        "not graded and keeps this grade."
    )


def test_every_counted_run_says_what_is_left():
    report = policy_for(metadata(at(20, 14), previous=[earlier(at(20, 9))])).graded(
        graded_results(30.0)
    )
    assert report["score"] == 30.0
    assert report["output"] == (
        "Submissions: 1 of 3 left (3 count in any 24 hours; this one counted).\n\n"
        "assignment rules: none found"
    )
    assert report["extra_data"][RECORD]["prefix"] == len(report["output"]) - len(
        "assignment rules: none found"
    )


def test_an_upload_with_no_submission_does_not_count():
    report = document(
        0.0, "Not graded: your upload holds 2 submissions (a/, b/): upload one.", SETTINGS
    )
    before = [earlier(at(20, 9)), earlier(at(20, 11), 17.0)]
    marked = policy_for(metadata(at(20, 12), previous=before)).not_graded(report)
    record = marked["extra_data"][RECORD]
    assert (record["counted"], record["reason"], record["counted_at"]) == (
        False,
        "not graded",
        [iso(at(20, 9)), iso(at(20, 11))],
    )
    assert marked["output"].startswith(
        "Submissions: 1 of 3 left (3 count in any 24 hours; this upload was not graded and "
        "did not count)."
    )
    # The course lowers its cap to 2: the next run is over it, and the grade that stands
    # is the last counted one, not the upload's 0.
    previous = [*before, earlier(at(20, 12), 0.0, marked)]
    policy = policy_for(
        metadata(at(20, 13), previous=previous), SubmissionPolicy(max_submissions=2)
    )
    assert [t.hour for t in policy.in_window] == [9, 11] and policy.over_the_cap
    capped = policy.capped(SETTINGS)
    assert capped["score"] == 17.0 and "tests" not in capped
    assert "17 points (its results are on that submission's page)" in capped["output"]


def test_with_no_graded_submission_a_capped_run_scores_0():
    """The ledger counts a run Gradescope no longer scores (regraded since, and failed)."""
    record = {"counted": False, "reason": "not graded", "counted_at": [at(20, 9)]}
    not_graded = graded_results(0.0) | {"extra_data": {RECORD: record}}
    previous = [earlier(at(20, 9), None), earlier(at(20, 10), 0.0, not_graded)]
    policy = policy_for(metadata(previous=previous), SubmissionPolicy(max_submissions=1))
    assert policy.over_the_cap
    report = policy.capped(SETTINGS)
    assert report["score"] == 0.0 and "no graded submission yet" in report["output"]


@pytest.mark.parametrize("output_format", ["md", "html"])
def test_the_policy_lines_are_rendered_as_the_rubric_says(output_format: str):
    settings = Gradescope(output_format=output_format)
    report = document(30.0, "x < y", settings)
    marked = RunPolicy(CAP, parse(metadata())).graded(report)
    block = marked["output"][: marked["extra_data"][RECORD]["prefix"]]
    assert block.strip() in (
        "```\nSubmissions: 2 of 3 left (3 count in any 24 hours; this one counted).\n```",
        "<pre>Submissions: 2 of 3 left (3 count in any 24 hours; this one counted).</pre>",
    )
    assert marked["output"].endswith(report["output"])


# The late penalty.

LATE = SubmissionPolicy(late_penalty=0.1)


@pytest.mark.parametrize(
    ("created_at", "per", "fraction"),
    [
        (at(28, 23, 59), "day", None),  # on the minute: on time
        (at(29, 0, 1), "day", 0.1),  # a started day
        (at(30, 0, 0), "day", 0.2),  # 24 h 1 min
        (at(29, 2, 30), "hour", 0.3),  # 2 h 31 min: three started hours
        (at(31, 0, 0), "once", 0.1),
    ],
)
def test_the_late_penalty_counts_started_days_or_hours(created_at, per, fraction):
    late = lateness(
        SubmissionPolicy(late_penalty=0.1, late_penalty_per=per), parse(metadata(created_at))
    )
    assert (late and late.fraction) == fraction


def test_a_late_submission_loses_the_penalty_named_in_its_results():
    report = graded_results(50.0) | {"leaderboard": [{"name": "Score", "value": 50.0}]}
    marked = policy_for(metadata(at(30, 3), late_due=at(31, 23)), LATE).graded(report)
    assert marked["score"] == 40.0 and marked["leaderboard"][0]["value"] == 40.0
    line = (
        "Late: submitted 1 d 3 h 1 min after the due date (2026-01-29 07:59 UTC): 20% off the "
        "score (2 started days at 10% each), 50 -> 40 points."
    )
    assert marked["output"].splitlines()[0] == line
    assert marked["extra_data"][RECORD]["late"] == {
        "due_date": iso(DUE),
        "late_due_date": iso(at(31, 23)),
        "late_by_seconds": 97260.0,
        "units": 2,
        "per": "day",
        "fraction": 0.2,
        "score_before": 50.0,
        "points_off": 10.0,
        "reason": line,
    }
    assert marked["tests"] == graded_results(50.0)["tests"]


def test_the_penalty_never_takes_the_score_below_0_and_names_the_late_due_date():
    policy = SubmissionPolicy(late_penalty=0.4)
    marked = policy_for(metadata(at(31, 12), late_due=at(30, 23)), policy).graded(
        graded_results(50.0)
    )
    assert marked["score"] == 0.0
    assert (
        marked["output"]
        .splitlines()[0]
        .endswith(
            "100% off the score (3 started days at 40% each), 50 -> 0 points. It came after the "
            "late due date (2026-01-31 07:00 UTC), when Gradescope takes uploads from staff only."
        )
    )


def test_an_extension_or_no_due_date_means_no_penalty():
    extended = metadata(at(30, 3), users=[{"id": 5, "assignment": {"due_date": at(31, 0)}}])
    assert lateness(LATE, parse(extended)) is None
    assert lateness(LATE, parse(metadata(at(30, 3), due=None))) is None
    report = policy_for(extended, LATE).graded(graded_results(50.0))
    assert report["score"] == 50.0 and report["output"] == "assignment rules: none found"
    assert report["extra_data"][RECORD] == {"counted": True, "reason": "counted"}


def test_durations_round_up_to_the_minute():
    assert duration(timedelta(seconds=1)) == "1 min"
    assert duration(timedelta(hours=23, minutes=59, seconds=1)) == "1 d 0 min"
    assert duration(timedelta(days=2, hours=3)) == "2 d 3 h 0 min"


# run_autograder, with the grader replaced by one that writes a results.json.


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """cs336-grade replaced by a stand-in that scores 50; the arguments of each call."""
    made: list[list[str]] = []

    def main(argv: list[str]) -> int:
        made.append(argv)
        out = Path(argv[argv.index("--out") + 1])
        (out / "results.json").write_text(json.dumps(graded_results(50.0)))
        return 0

    monkeypatch.setattr(cli, "main", main)
    monkeypatch.setattr(run_autograder_module.container, "memory_limit", lambda: None)
    return made


@pytest.fixture
def root(tmp_path: Path, calls: list[list[str]]) -> Path:
    """An /autograder holding a submission."""
    synthetic.write_submission(tmp_path / "submission", synthetic.CORRECT)
    return tmp_path


def _rubric(tmp_path: Path, policy: str) -> Path:
    text = DEFAULT_RUBRIC.read_text()
    path = tmp_path / "rubric.toml"
    path.write_text(text[: text.index("[policy]")] + f"[policy]\n{policy}\n")
    return path


def _results(root: Path) -> dict[str, Any]:
    return json.loads((root / "results" / "results.json").read_text())


def test_without_metadata_a_policy_cannot_apply_and_the_run_grades_normally(
    root: Path, capsys: pytest.CaptureFixture[str]
):
    rubric = _rubric(root, "max_submissions = 1\nlate_penalty = 0.5")
    assert run_autograder_module.grade(root, [], rubric_path=rubric) == 0
    assert _results(root) == graded_results(50.0)
    assert (
        "policy: not applied to this run (graded without it): cannot read"
        in capsys.readouterr().out
    )
    (root / METADATA).write_text('{"created_at": 3}')
    assert run_autograder_module.grade(root, [], rubric_path=rubric) == 0
    assert _results(root)["score"] == 50.0
    assert "created_at is not a date: 3" in capsys.readouterr().out


def test_run_autograder_grades_no_submission_over_the_cap(
    root: Path, calls: list[list[str]], capsys: pytest.CaptureFixture[str]
):
    rubric = _rubric(root, "max_submissions = 1")
    previous = [earlier(at(20, 9), 42.0, graded_results(42.0))]
    (root / METADATA).write_text(json.dumps(metadata(at(20, 14), previous=previous)))
    assert run_autograder_module.grade(root, [], rubric_path=rubric) == 0
    assert calls == []
    assert _results(root)["score"] == 42.0
    assert _results(root)["extra_data"][RECORD]["reason"] == "over the cap"
    assert (
        "policy: over the cap; score 42; 1 counted in the window, 0 left" in capsys.readouterr().out
    )
    (root / METADATA).write_text(json.dumps(metadata(at(21, 14), previous=previous)))
    assert run_autograder_module.grade(root, [], rubric_path=rubric) == 0
    assert len(calls) == 1 and _results(root)["score"] == 50.0


def test_run_autograder_takes_the_late_penalty(root: Path):
    rubric = _rubric(root, 'late_penalty = 0.25\nlate_penalty_per = "once"')
    (root / METADATA).write_text(json.dumps(metadata(at(29, 1))))
    assert run_autograder_module.grade(root, [], rubric_path=rubric) == 0
    results = _results(root)
    assert results["score"] == 37.5
    assert results["extra_data"][RECORD]["late"]["fraction"] == 0.25


def test_a_broken_rubric_is_not_graded_and_says_so(root: Path, capsys: pytest.CaptureFixture[str]):
    # Exit 0 with a results.json that says "not graded": Gradescope blames the student for a
    # run that writes none (not_graded.py). The rubric's error is for staff, on stderr.
    assert (
        run_autograder_module.grade(root, [], rubric_path=_rubric(root, "late_penalty = -1")) == 0
    )
    err = capsys.readouterr().err
    assert "not graded: rubric" in err and "late_penalty must be a number between 0 and 1" in err
    results = _results(root)
    assert results["extra_data"]["not_graded"]["kind"] == "rubric"
    assert results["tests"] == [] and "Not graded" in results["output"]
