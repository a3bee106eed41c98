"""What the autograder's `run_autograder` runs, in Gradescope's container, per submission.

`python -m cs336_harness.grading.run_autograder ROOT [OPTIONS]` grades ROOT/submission
with `cs336-grade OPTIONS` on inputs drawn for this run, and puts its Gradescope report
where Gradescope reads it, ROOT/results/results.json (ROOT: /autograder on Gradescope).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from cs336_harness.grading import cli
from cs336_harness.grading.reports.checked import write_json
from cs336_harness.grading.reports.gradescope import document
from cs336_harness.grading.scoring import load_rubric
from cs336_harness.grading.submissions import is_submission
from cs336_harness.untrusted import clean_names

# How many of a misplaced submission's top-level names its message shows.
SHOWN = 20


def _misplaced(submission: Path) -> str:
    """Why a submission without cs336_basics/ or tests/adapters.py at its top was not
    graded, naming what its top holds (cleaned: the names are the student's)."""
    found = sorted(os.listdir(submission)) if submission.is_dir() else []
    shown = ", ".join(clean_names(found[:SHOWN]))
    if len(found) > SHOWN:
        shown += f" and {len(found) - SHOWN} more"
    return (
        "Not graded: a submission holds cs336_basics/ and tests/adapters.py at its top level "
        "(upload the files, or a zip of them, not of the folder holding them). "
        f"At the top of this one: {shown or 'nothing'}."
    )


def grade(root: Path, options: list[str]) -> int:
    """Grade `root`/submission into `root`/results/results.json; cs336-grade's exit status.

    A submission whose files are not at its top level gets a score of 0 and a message that
    says why. When the grader itself cannot run, or the submission's worker could not
    start before any of its code ran (exit 2, the reason on stderr), no results.json is
    written: Gradescope then shows staff an autograder failure, not a score of 0 the
    student did not earn."""
    submission, results = root / "submission", root / "results"
    results.mkdir(parents=True, exist_ok=True)
    if not is_submission(submission):
        report = document(0.0, _misplaced(submission), load_rubric().gradescope)
        write_json(results / "results.json", report, indent=2)
        return 0
    with tempfile.TemporaryDirectory(prefix="cs336-autograder-") as out:
        # Naming a submission draws fresh inputs; the rubric is this package's own.
        status = cli.main([str(submission), "--out", out, *options])
        report = Path(out) / "results.json"
        if report.is_file() and status != cli.EXIT_GRADER_ERROR:
            shutil.copyfile(report, results / "results.json")
            # The grader named its own directory, which is gone: say where the report is.
            print(f"results.json copied to {results}", flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cs336_harness.grading.run_autograder",
        description="Grade ROOT/submission into ROOT/results/results.json (run_autograder).",
    )
    parser.add_argument("root", type=Path, help="/autograder on Gradescope")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="cs336-grade's options")
    args = parser.parse_args(argv)
    return grade(args.root, args.options)


if __name__ == "__main__":
    sys.exit(main())
