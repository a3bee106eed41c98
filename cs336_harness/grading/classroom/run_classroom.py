"""What the GitHub Classroom workflow (`cs336-grade classroom`) runs in the student's
repository on GitHub Actions: `python -m cs336_harness.grading.classroom.run_classroom
[SUBMISSION] [OPTIONS]` grades SUBMISSION (default: the checkout, `.`) with `cs336-grade
OPTIONS`, and appends each runner's result to `$GITHUB_OUTPUT`, from where the workflow
hands it to the autograding reporter (docs/grading.md, "On GitHub Classroom").

Where the grader cannot grade, every runner gets an error that says so: the reporter then
shows why and Classroom records 0, rather than failing on a runner it cannot find. What the
grader prints is kept from being read as workflow commands (`::stop-commands::`): a
submission's messages are in it."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path

from cs336_harness.grading import cli
from cs336_harness.grading.reports import CLASSROOM
from cs336_harness.grading.reports.classroom import not_graded, step_outputs
from cs336_harness.grading.scoring import DEFAULT_RUBRIC, RubricError, load_rubric

NOT_GRADED = (
    "not graded: the grader could not run here (a failure of the grading run, not a verdict "
    "on your code); the Grade step's log says why"
)


def _commands_stopped(token: str | None, stopped: bool) -> None:
    """Stop GitHub Actions reading workflow commands in the log (until the token comes
    back), or resume; nothing off GitHub Actions."""
    if token is not None:
        print(f"::stop-commands::{token}" if stopped else f"::{token}::", flush=True)


def grade(
    submission: Path,
    options: list[str],
    out: Path,
    github_output: Path | None,
    rubric_path: Path = DEFAULT_RUBRIC,
) -> int:
    """Grade `submission` into `out` (every report, `classroom.json` among them) and append
    the runners' results to `github_output`; 0 when they were written, whatever the score
    (the reporter says pass or fail), else cs336-grade's exit status."""
    try:
        rubric = load_rubric(rubric_path)
    except RubricError as error:
        print(f"cs336-grade: cannot grade: {error}", file=sys.stderr, flush=True)
        return cli.EXIT_GRADER_ERROR
    token = secrets.token_hex(16) if os.environ.get("GITHUB_ACTIONS") == "true" else None
    _commands_stopped(token, True)
    try:
        status = cli.main([str(submission), "--out", str(out), "--rubric", str(rubric_path),
                           *options])  # fmt: skip
    finally:
        _commands_stopped(token, False)
    report = out / CLASSROOM
    if status == cli.EXIT_INTERRUPTED:
        return status
    if status != cli.EXIT_GRADER_ERROR and report.is_file():
        results = json.loads(report.read_text())
    else:
        results = not_graded(rubric, NOT_GRADED)
    points = sum(t["score"] for r in results.values() if r["max_score"] for t in r["tests"])
    most = sum(r["max_score"] for r in results.values())
    print(f"classroom: {len(results)} runners, {points:g} of {most:g} points", flush=True)
    if github_output is None:
        print("classroom: no $GITHUB_OUTPUT (not on GitHub Actions): results only in "
              f"{report}", flush=True)  # fmt: skip
        return 0
    with github_output.open("a") as f:
        f.write(step_outputs(results))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cs336_harness.grading.classroom.run_classroom",
        description="Grade a checkout for GitHub Classroom: each runner's result to "
        "$GITHUB_OUTPUT; other options go to cs336-grade.",
    )
    parser.add_argument("submission", nargs="?", type=Path, default=Path("."))
    parser.add_argument("--out", type=Path, default=Path("grading"), help="report directory")
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC)
    parser.add_argument(
        "--github-output",
        type=Path,
        default=os.environ.get("GITHUB_OUTPUT") or None,
        help="the file to append the runners' results to (default: $GITHUB_OUTPUT)",
    )
    args, options = parser.parse_known_args(argv)
    return grade(args.submission, options, args.out, args.github_output, args.rubric)


if __name__ == "__main__":
    sys.exit(main())
