"""What the autograder's `run_autograder` runs in Gradescope's container, per submission:
`python -m cs336_harness.grading.gradescope.run_autograder [--cuda] [--per-student
SECRET_FILE] ROOT [OPTIONS]` finds the upload in ROOT/submission, draws its student's
inputs, grades it with `cs336-grade OPTIONS --for-students`, applies the rubric's `[policy]`
and writes ROOT/results/results.json (ROOT: /autograder), also when it cannot grade
(`not_graded`); what staff need to diagnose a run goes to stdout."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from cs336_harness.grading import cli
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.gradescope import metadata as gradescope_metadata
from cs336_harness.grading.gradescope import not_graded
from cs336_harness.grading.gradescope.policy import RECORD, RunPolicy
from cs336_harness.grading.inputs import drawn
from cs336_harness.grading.inputs.student_inputs import student_seed
from cs336_harness.grading.intake.upload import to_grade
from cs336_harness.grading.reports.archive import read_archive
from cs336_harness.grading.reports.checked import write_json
from cs336_harness.grading.reports.gradescope import document
from cs336_harness.grading.sandbox import container
from cs336_harness.grading.sandbox.container import ImageMemory, fit_memory
from cs336_harness.grading.sandbox.limits import format_size
from cs336_harness.grading.scoring import (
    DEFAULT_RUBRIC,
    Gradescope,
    RubricError,
    SubmissionPolicy,
    load_rubric,
)


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


def _not_graded(
    results: Path,
    cause: not_graded.Cause,
    why: str,
    settings: Gradescope,
    policy: RunPolicy | None = None,
) -> int:
    """Write the results.json of a run that could not grade (`cause`), and `why` for staff
    on stderr (run_autograder's output); the exit status, 0: results.json says it all."""
    print(f"cs336-grade: not graded: {why}", file=sys.stderr, flush=True)
    report = cause.results(settings)
    if policy is not None:
        report = policy.not_graded(report)
        _said(report)
    write_json(results / "results.json", report, indent=2)
    return 0


def _failed_cause(out: Path, limit: int | None, needs: ImageMemory) -> not_graded.Cause:
    """Why a grading that ended with exit 2 did not grade: the kernel stopped a process for
    the container's memory, a host failure before the submission's code ran (its reports
    say so: `grading.json`), or the grader could not run at all."""
    if container.oom_kills() > 0 and limit is not None:
        return not_graded.memory(limit, needs.needed)
    archive = out / "grading.json"
    if archive.is_file():
        return not_graded.host()
    return not_graded.setup()


def grade(
    root: Path,
    options: list[str],
    secret_file: Path | None = None,
    rubric_path: Path = DEFAULT_RUBRIC,
    needs: ImageMemory = container.CPU,
) -> int:
    """Grade the submission in `root`/submission into `root`/results/results.json;
    cs336-grade's exit status. With `secret_file`, on the inputs of its student; `needs`:
    what the image's processes need of the container's memory.

    The submission is looked for in the upload (`to_grade`): one that is not there, or
    not alone, gets a score of 0 and a one-line message that says why. When the grader
    cannot grade (the container too small, the image or the rubric broken, the host failing
    before any of the submission's code ran), results.json says that it was not graded and
    what staff change (`not_graded`), not a score the student did not earn, and stderr the
    error. A submission over the rubric's cap is not graded: the last counted grade stands."""
    upload, results = root / "submission", root / "results"
    results.mkdir(parents=True, exist_ok=True)
    try:
        rubric = load_rubric(rubric_path)
    except RubricError as error:
        return _not_graded(results, not_graded.rubric(), str(error), Gradescope())
    policy = run_policy(root, rubric.policy)
    if policy is not None and policy.over_the_cap:
        report = policy.capped(rubric.gradescope)
        write_json(results / "results.json", report, indent=2)
        _said(report)
        return 0
    limit = container.memory_limit()
    fitted = fit_memory(options, limit, needs=needs)
    if isinstance(fitted, str):
        cause = not_graded.memory(limit or 0, needs.needed)
        return _not_graded(results, cause, fitted, rubric.gradescope, policy)
    if fitted is not options:
        print(
            f"memory: the container has {format_size(limit or 0)}; a worker's data memory is "
            f"capped at {format_size(int(fitted[-1].split('=')[1]))} to leave the grader "
            f"{format_size(needs.trusted)} (--memory-limit)",
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
                cause = _failed_cause(Path(out), limit, needs)
                return _not_graded(results, cause, str(error), rubric.gradescope, policy)
            spent = time.monotonic() - started
            print(f"inputs: {inputs.description}, drawn in {spent:.1f} s", flush=True)
            fitted = [*_with_deadline_less(fitted, spent), f"--drawn-inputs={inputs.root}"]
        # The rubric is this package's own; the results are for the student to read.
        status = cli.main([str(target), "--out", out, "--for-students", *fitted])
        report = Path(out) / "results.json"
        if status == cli.EXIT_GRADER_ERROR or not report.is_file():
            cause = _failed_cause(Path(out), limit, needs)
            why = _host_failure(Path(out)) or "the grader stopped (its error is above)"
            return _not_graded(results, cause, why, rubric.gradescope, policy)
        if policy is None:
            shutil.copyfile(report, results / "results.json")
        else:
            graded = policy.graded(json.loads(report.read_text()))
            write_json(results / "results.json", graded, indent=2)
            _said(graded)
        # The grader named its own directory, which is gone: say where the report is.
        print(f"results.json copied to {results}", flush=True)
    return status


def _host_failure(out: Path) -> str:
    """The message of a test the host failed, from the run's grading.json; "" if none."""
    try:
        _, found = read_archive(out / "grading.json")
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return next((t.message for _, r in found for t in r.tests if t.host_failure), "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cs336_harness.grading.gradescope.run_autograder",
        description="Grade ROOT/submission into ROOT/results/results.json (run_autograder).",
    )
    parser.add_argument(
        "--cuda",
        action="store_true",
        help="the image holds PyPI's CUDA build of torch, which needs more memory per process",
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
    needs = container.for_image(args.cuda)
    try:
        return grade(args.root, args.options, args.per_student, needs=needs)
    except Exception:
        traceback.print_exc()
        results = args.root / "results"
        results.mkdir(parents=True, exist_ok=True)
        return _not_graded(results, not_graded.setup(), "an error of the grader's (above)",
                           Gradescope())  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
