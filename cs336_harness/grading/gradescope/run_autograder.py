"""What the autograder's `run_autograder` runs in Gradescope's container, per submission:
`python -m cs336_harness.grading.gradescope.run_autograder [--per-student SECRET_FILE] ROOT
[OPTIONS]` finds the upload in ROOT/submission, draws its student's inputs, grades it with
`cs336-grade OPTIONS --for-students`, applies the rubric's `[policy]` and writes
ROOT/results/results.json (ROOT: /autograder); what staff need to diagnose a run goes to stdout."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cs336_harness.grading import cli
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.gradescope import metadata as gradescope_metadata
from cs336_harness.grading.gradescope.policy import RECORD, RunPolicy
from cs336_harness.grading.inputs import drawn
from cs336_harness.grading.inputs.student_inputs import student_seed
from cs336_harness.grading.intake.upload import to_grade
from cs336_harness.grading.reports.checked import write_json
from cs336_harness.grading.reports.gradescope import document
from cs336_harness.grading.sandbox import container
from cs336_harness.grading.sandbox.container import TRUSTED_MEMORY, fit_memory
from cs336_harness.grading.sandbox.limits import format_size
from cs336_harness.grading.scoring import DEFAULT_RUBRIC, RubricError, SubmissionPolicy, load_rubric


def _with_deadline_less(options: list[str], spent: float) -> list[str]:
    """`options` with `--deadline=S` shortened by `spent` seconds, what the run used first."""
    return [
        f"--deadline={float(o.split('=', 1)[1]) - spent:g}" if o.startswith("--deadline=") else o
        for o in options
    ]


def student_inputs(root: Path, secret_file: Path, dest: Path) -> drawn.DrawnInputs:
    """Draw the inputs of the student (or group) whose submission this is into `dest`. The
    secret is read here, and only the student's own seed leaves this process (a command
    line is visible to every process of the container)."""
    student = gradescope_metadata.gradescope_student(root / gradescope_metadata.METADATA)
    mode = secret_file.stat().st_mode
    if mode & 0o077:
        raise GraderError(
            f"{secret_file} is open to other users (mode {mode & 0o777:o}), and so to the "
            f"submission's code: chmod go-rwx {secret_file} (setup.sh does)"
        )
    secret = secret_file.read_text().strip()
    seed = student_seed(secret, student.key)
    return drawn.draw_apart(seed, dest, student.description)


def run_policy(root: Path, policy: SubmissionPolicy) -> RunPolicy | None:
    """The rubric's `[policy]` for this run, from ROOT/submission_metadata.json; None where
    none is set, or the metadata cannot be read (stdout says so, for staff)."""
    if not policy.active:
        return None
    path = root / gradescope_metadata.METADATA
    try:
        metadata = gradescope_metadata.read(path)
    except gradescope_metadata.MetadataError as error:
        print(f"policy: not applied to this run (graded without it): {error}", flush=True)
        return None
    return RunPolicy(policy, metadata)


def _said(report: dict) -> None:
    """What the policies did to a run, on stdout for staff."""
    record = report["extra_data"][RECORD]
    late = record.get("late", {}).get("reason")
    counts = record.get("submissions")
    print(
        f"policy: {record['reason']}; score {report['score']:g}"
        + (f"; {counts['counted']} counted in the window, {counts['left']} left" if counts else "")
        + (f"; {late}" if late else ""),
        flush=True,
    )


def grade(
    root: Path,
    options: list[str],
    secret_file: Path | None = None,
    rubric_path: Path = DEFAULT_RUBRIC,
) -> int:
    """Grade the submission in `root`/submission into `root`/results/results.json;
    cs336-grade's exit status. With `secret_file`, on the inputs of its student.

    The submission is looked for in the upload (`to_grade`): one that is not there, or
    not alone, gets a score of 0 and a one-line message that says why. When
    the grader itself cannot run, or the host failed before any of the submission's code
    ran (exit 2, the reason on stderr), no results.json is written: Gradescope then shows
    staff an autograder failure, not a score of 0 the student did not earn. A submission
    over the rubric's cap is not graded: the last counted grade stands."""
    upload, results = root / "submission", root / "results"
    results.mkdir(parents=True, exist_ok=True)
    try:
        rubric = load_rubric(rubric_path)
    except RubricError as error:
        print(f"cs336-grade: cannot grade: {error}", file=sys.stderr, flush=True)
        return cli.EXIT_GRADER_ERROR
    policy = run_policy(root, rubric.policy)
    if policy is not None and policy.over_the_cap:
        report = policy.capped(rubric.gradescope)
        write_json(results / "results.json", report, indent=2)
        _said(report)
        return 0
    limit = container.memory_limit()
    fitted = fit_memory(options, limit)
    if isinstance(fitted, str):
        print(f"cs336-grade: cannot grade: {fitted}", file=sys.stderr, flush=True)
        return cli.EXIT_GRADER_ERROR
    if fitted is not options:
        print(
            f"memory: the container has {format_size(limit)}; a worker's data memory is "
            f"capped at {format_size(int(fitted[-1].split('=')[1]))} to leave the grader "
            f"{format_size(TRUSTED_MEMORY)} (--memory-limit)",
            flush=True,
        )
    target = to_grade(upload)
    if isinstance(target, str):
        report = document(0.0, target, rubric.gradescope)
        if policy is not None:
            report = policy.not_graded(report)
            _said(report)
        write_json(results / "results.json", report, indent=2)
        return 0
    with tempfile.TemporaryDirectory(prefix="cs336-autograder-") as out:
        if secret_file is not None:
            started = time.monotonic()
            try:
                inputs = student_inputs(root, secret_file, Path(out) / "inputs")
            except (GraderError, ValueError, OSError) as error:
                print(f"cs336-grade: cannot grade: {error}", file=sys.stderr, flush=True)
                return cli.EXIT_GRADER_ERROR
            spent = time.monotonic() - started
            print(f"inputs: {inputs.description}, drawn in {spent:.1f} s", flush=True)
            fitted = [*_with_deadline_less(fitted, spent), f"--drawn-inputs={inputs.root}"]
        # The rubric is this package's own; the results are for the student to read.
        status = cli.main([str(target), "--out", out, "--for-students", *fitted])
        report = Path(out) / "results.json"
        if report.is_file() and status != cli.EXIT_GRADER_ERROR:
            if policy is None:
                shutil.copyfile(report, results / "results.json")
            else:
                graded = policy.graded(json.loads(report.read_text()))
                write_json(results / "results.json", graded, indent=2)
                _said(graded)
            # The grader named its own directory, which is gone: say where the report is.
            print(f"results.json copied to {results}", flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cs336_harness.grading.gradescope.run_autograder",
        description="Grade ROOT/submission into ROOT/results/results.json (run_autograder).",
    )
    parser.add_argument(
        "--per-student",
        type=Path,
        metavar="SECRET_FILE",
        help="draw the inputs of the submission's student (submission_metadata.json's users) "
        "from the secret in this file",
    )
    parser.add_argument("root", type=Path, help="/autograder on Gradescope")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="cs336-grade's options")
    args = parser.parse_args(argv)
    return grade(args.root, args.options, args.per_student)


if __name__ == "__main__":
    sys.exit(main())
