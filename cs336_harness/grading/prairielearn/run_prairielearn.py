"""What PrairieLearn's external grader runs in the course's image for every submission (the
question's `externalGradingOptions.entrypoint`, written by `cs336-grade prairielearn`):
`python -m cs336_harness.grading.prairielearn.run_prairielearn [--per-variant SECRET_FILE]
ROOT [OPTIONS]` (ROOT: /grade) makes the course's files private to root, finds the upload's
submission in ROOT/student, draws its variant's inputs, grades it with `cs336-grade OPTIONS
--for-students` and writes ROOT/results/results.json in PrairieLearn's format; what staff
need to diagnose a run goes to stdout, the grading job's log (docs/grading.md, "On
PrairieLearn").

It exits 0 whatever happened: PrairieLearn reads results.json only from a container that
did. A submission that could not be graded gets `gradable: false` and the reason, and
PrairieLearn then counts no attempt and takes no points; every other gets its score."""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cs336_harness.grading import cli
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.inputs import drawn
from cs336_harness.grading.inputs.student_inputs import student_seed
from cs336_harness.grading.intake.upload import to_grade
from cs336_harness.grading.reports import PRAIRIELEARN
from cs336_harness.grading.reports.archive import read_archive
from cs336_harness.grading.reports.checked import write_json
from cs336_harness.grading.reports.prairielearn import not_gradable
from cs336_harness.grading.results import Status, SubmissionResult
from cs336_harness.grading.sandbox import container
from cs336_harness.grading.sandbox.limits import format_size
from cs336_harness.grading.scoring import DEFAULT_RUBRIC, RubricError, load_rubric

# What raises the container's memory: PrairieLearn's grader hosts set it for every course
# (2 GiB by default, `graderDockerMemory`); a course's question cannot.
SETTING = "PrairieLearn: the grader host's graderDockerMemory"
# The folders of /grade that hold the course's files, which the submission must not read:
# the grading package and its secret, the question's tests, the job's data (`shared` is
# PrairieLearn's older copy of serverFilesCourse).
COURSE_FILES = ("serverFilesCourse", "shared", "tests", "data")
NOT_GRADED = (
    "Not graded: the grader could not run (a failure on the course's side, not in your code; "
    "course staff can see why in this grading job's log). Submit again later, or ask them."
)


def _say(line: str) -> None:
    print(line, flush=True)


def make_private(root: Path) -> None:
    """Every file and folder of the course's under `root` readable by its owner alone (root),
    links left as they are: the submission's user may read none of them."""
    for name in COURSE_FILES:
        top = root / name
        if not top.is_dir() or top.is_symlink():
            continue
        for directory, folders, files in os.walk(top):
            for entry in [directory, *(os.path.join(directory, f) for f in (*folders, *files))]:
                mode = os.lstat(entry).st_mode
                if not stat.S_ISLNK(mode):
                    os.chmod(entry, stat.S_IMODE(mode) & 0o700)


def variant_key(root: Path) -> str:
    """The key a submission's inputs are drawn for: its variant's seed, from the job's
    data.json. Each student has variants of their own (a group its group's), every
    resubmission to one variant is graded on its inputs."""
    path = root / "data" / "data.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise GraderError(f"cannot read {path}: {error}") from None
    seed = data.get("variant_seed") if isinstance(data, dict) else None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise GraderError(f"{path} has no variant_seed (an integer): {seed!r:.80}")
    return f"variant:{seed}"


def variant_inputs(root: Path, secret_file: Path, dest: Path) -> drawn.DrawnInputs:
    """Draw the inputs of the submission's variant into `dest`, from the secret in
    `secret_file` (refused if another user could read it); only the seed leaves here."""
    key = variant_key(root)
    mode = secret_file.stat().st_mode
    if mode & 0o077:
        raise GraderError(f"{secret_file} is open to other users (mode {mode & 0o777:o})")
    seed = student_seed(secret_file.read_text().strip(), key)
    return drawn.draw_apart(seed, dest, f"PrairieLearn {key.replace(':', ' ')}")


def refusal(result: SubmissionResult) -> str:
    """The intake's reason where it refused the submission (every test an error that says
    why, no worker started: none of its code ran); "" where it was graded."""
    tests = result.tests
    refused = result.workers == 0 and tests and all(t.status == Status.ERROR for t in tests)
    messages = {t.message for t in tests}
    if refused and len(messages) == 1 and next(iter(messages)).startswith("not graded: "):
        return "Not graded: " + next(iter(messages)).removeprefix("not graded: ")
    return ""


def _graded(out: Path, status: int) -> dict[str, Any]:
    """results.json from the grader's reports in `out`, or why there is none to give."""
    report = out / PRAIRIELEARN
    if status == cli.EXIT_GRADER_ERROR or not report.is_file():
        _say(f"prairielearn: cs336-grade exited {status} without results: not gradable")
        return not_gradable(NOT_GRADED)
    _, [(_, result)] = read_archive(out / "grading.json")
    why = refusal(result)
    return not_gradable(why) if why else json.loads(report.read_text())


def _with_deadline_less(options: list[str], spent: float) -> list[str]:
    """`options` with `--deadline=S` shortened by `spent` seconds, what the run used first."""
    return [
        f"--deadline={float(o.split('=', 1)[1]) - spent:g}" if o.startswith("--deadline=") else o
        for o in options
    ]


def grade(
    root: Path, options: list[str], secret_file: Path | None = None,
    rubric_path: Path = DEFAULT_RUBRIC,
) -> int:  # fmt: skip
    """Grade the submission in `root`/student into `root`/results/results.json; 0, or
    130 when interrupted."""
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)

    def write(document: dict[str, Any]) -> int:
        write_json(results / "results.json", document, indent=2)
        score = document.get("score")
        _say(f"prairielearn: results.json written: gradable {document['gradable']}"
             + (f", score {score:g}" if score is not None else ""))  # fmt: skip
        return 0

    try:
        make_private(root)
        load_rubric(rubric_path)
    except (RubricError, OSError) as error:
        _say(f"cs336-grade: cannot grade: {error}")
        return write(not_gradable(NOT_GRADED))
    limit = container.memory_limit()
    fitted = container.fit_memory(options, limit, SETTING)
    if isinstance(fitted, str):
        _say(f"cs336-grade: cannot grade: {fitted}")
        return write(not_gradable(NOT_GRADED))
    if fitted is not options:
        capped = format_size(int(fitted[-1].split("=")[1]))
        _say(f"memory: the container has {format_size(limit)}; a worker's data memory is "
             f"capped at {capped} (--memory-limit)")  # fmt: skip
    target = to_grade(root / "student")
    if isinstance(target, str):
        return write(not_gradable(target))
    with tempfile.TemporaryDirectory(prefix="cs336-prairielearn-") as work:
        out = Path(work) / "reports"
        if secret_file is not None:
            started = time.monotonic()
            try:
                inputs = variant_inputs(root, secret_file, Path(work) / "inputs")
            except (GraderError, ValueError, OSError) as error:
                _say(f"cs336-grade: cannot grade: {error}")
                return write(not_gradable(NOT_GRADED))
            spent = time.monotonic() - started
            _say(f"inputs: {inputs.description}, drawn in {spent:.1f} s")
            fitted = [*_with_deadline_less(fitted, spent), f"--drawn-inputs={inputs.root}"]
        status = cli.main([str(target), "--out", str(out), "--for-students",
                           "--rubric", str(rubric_path), *fitted])  # fmt: skip
        if status == cli.EXIT_INTERRUPTED:
            return status
        return write(_graded(out, status))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cs336_harness.grading.prairielearn.run_prairielearn",
        description="Grade ROOT/student into ROOT/results/results.json (PrairieLearn).",
    )
    parser.add_argument(
        "--per-variant",
        type=Path,
        metavar="SECRET_FILE",
        help="draw the inputs of the submission's variant (data/data.json's variant_seed) "
        "from the secret in this file",
    )
    parser.add_argument("root", type=Path, help="/grade on PrairieLearn")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="cs336-grade's options")
    args = parser.parse_args(argv)
    return grade(args.root, args.options, args.per_variant)


if __name__ == "__main__":
    sys.exit(main())
