"""`cs336-grade [SUBMISSION ...]`: grade submissions against the trusted tests and rubric.

With no argument it grades the bundled implementation. Exit status: 0 when grading
completed, whatever the scores; 1 when a score is below `--fail-under`; 2 when the grader
itself could not run; 130 when interrupted (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import signal
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from cs336_harness.adapter_loader import REPO_ROOT
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.fresh import fresh_fixtures
from cs336_harness.grading.grader import Grader
from cs336_harness.grading.limits import Limits, format_size, parse_size
from cs336_harness.grading.reports.gradescope import results_json
from cs336_harness.grading.reports.junit import write_junit
from cs336_harness.grading.reports.summary import write_summary
from cs336_harness.grading.reports.table import family_table, submissions_table
from cs336_harness.grading.results import SubmissionResult
from cs336_harness.grading.rubric import DEFAULT_RUBRIC, Rubric, RubricError, load_rubric
from cs336_harness.grading.scoring import Score, score
from cs336_harness.grading.submissions import discover
from cs336_harness.grading.trusted import build_bundle, remove_tree
from cs336_harness.manifest import manifest_problems

EXIT_OK, EXIT_BELOW_THRESHOLD, EXIT_GRADER_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
# As in the harness's pytest plugin, which the grader does not import: it imports torch,
# which only the test processes need (6 s here).
DEFAULT_FIXTURES = REPO_ROOT / "tests" / "fixtures"


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    defaults = Limits()
    parser = argparse.ArgumentParser(
        prog="cs336-grade",
        description="Grade CS336 assignment-1 submissions component by component.",
    )
    parser.add_argument(
        "submissions",
        nargs="*",
        type=Path,
        metavar="SUBMISSION",
        help="a directory with cs336_basics/ and tests/adapters.py, or a directory of such "
        "directories (default: the bundled implementation)",
    )
    parser.add_argument("--out", type=Path, default=Path("grading"), help="report directory")
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC, help="points per family")
    parser.add_argument(
        "--partial", action="store_true", help="credit a family in proportion to tests passed"
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, help="submissions graded at once")
    parser.add_argument(
        "--fail-under",
        type=float,
        metavar="PERCENT",
        help="exit 1 when a submission scores below this percentage of the maximum",
    )
    parser.add_argument(
        "--fresh-inputs",
        type=int,
        metavar="SEED",
        help="grade on fixtures drawn for SEED now, instead of the stored ones",
    )
    parser.add_argument(
        "--fixtures-dir", type=Path, default=DEFAULT_FIXTURES, help="trusted fixture directory"
    )
    parser.add_argument(
        "--test-timeout", type=float, default=defaults.test_timeout, help="seconds per test"
    )
    parser.add_argument(
        "--submission-timeout",
        type=float,
        default=defaults.submission_timeout,
        help="seconds for all of one submission's tests",
    )
    parser.add_argument(
        "--memory-limit",
        type=_size,
        default=defaults.memory,
        metavar="SIZE",
        help="data memory per test process, e.g. 4G; 0: none "
        f"(default {format_size(defaults.memory)})",
    )
    parser.add_argument(
        "--output-limit",
        type=_size,
        default=defaults.output,
        metavar="SIZE",
        help=f"largest file a test process may write, its output included "
        f"(default {format_size(defaults.output)})",
    )
    parser.add_argument(
        "--visibility",
        default="visible",
        choices=["visible", "hidden", "after_due_date", "after_published"],
        help="Gradescope visibility of the results",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


def _trusted_fixtures(args: argparse.Namespace, workroot: Path) -> Path:
    if args.fresh_inputs is not None:
        return fresh_fixtures(args.fresh_inputs, workroot / "fresh-fixtures")
    problems = manifest_problems(args.fixtures_dir.resolve())
    if problems:
        raise GraderError("the trusted fixtures fail their manifest:\n  " + "\n  ".join(problems))
    return args.fixtures_dir.resolve()


def _grade_all(
    grader: Grader, submissions: list[tuple[str, Path]], jobs: int, console: Console
) -> list[SubmissionResult]:
    columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with (
        Progress(*columns, console=console, transient=True) as progress,
        ThreadPoolExecutor(max_workers=jobs) as pool,
    ):
        task = progress.add_task("grading", total=len(submissions))
        futures = [pool.submit(grader.grade, name, path) for name, path in submissions]
        for future in futures:
            future.add_done_callback(lambda _: progress.advance(task))
        try:
            return [future.result() for future in futures]
        except BaseException:  # Ctrl-C or a grader error: stop the other submissions too
            for future in futures:
                future.cancel()
            grader.stop()
            raise


def _warn_about_rubric(rubric: Rubric, results: list[Score], console: Console) -> None:
    graded = {f.family for r in results for f in r.families}
    unknown = sorted(f for f in graded if rubric.get(f) is None)
    if unknown:
        console.print(
            f"[yellow]warning:[/] test families missing from the rubric, graded for 0 points: "
            f"{', '.join(unknown)}"
        )
    untested = [f.family for f in rubric.families if f.family not in graded]
    if untested:
        console.print(f"[dim]rubric families with no tests (not graded): {', '.join(untested)}[/]")


def _write_reports(results: list[Score], out: Path, visibility: str) -> list[str]:
    """Write every report; return what was written, relative to `out`, for the terminal."""
    out.mkdir(parents=True, exist_ok=True)
    for result in results:
        directory = out if len(results) == 1 else out / result.submission.name
        directory.mkdir(parents=True, exist_ok=True)
        report = results_json(result, visibility)
        (directory / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    write_junit(results, out / "junit.xml")
    if len(results) == 1:
        return ["results.json", "junit.xml"]
    write_summary(results, out / "summary.csv")
    return ["<submission>/results.json", "junit.xml", "summary.csv"]


def run(args: argparse.Namespace, console: Console, errors: Console) -> int:
    rubric = load_rubric(args.rubric)
    submissions = discover(args.submissions)
    limits = Limits(
        args.test_timeout, args.submission_timeout, args.memory_limit, args.output_limit
    )
    workroot = Path(tempfile.mkdtemp(prefix="cs336-grade-"))
    grader: Grader | None = None
    try:
        bundle = build_bundle(REPO_ROOT, _trusted_fixtures(args, workroot), workroot / "bundle")
        grader = Grader(bundle, limits, workroot)
        graded = _grade_all(grader, submissions, args.jobs, errors)
    finally:
        if grader is not None:
            grader.stop()  # the collection run, if grading failed before it finished
        remove_tree(workroot)
    results = [score(r, rubric, args.partial) for r in graded]
    # Reports first: they are what CI keeps, even if the terminal goes away mid-table.
    written = _write_reports(results, args.out, args.visibility)
    _warn_about_rubric(rubric, results, errors)
    console.print(family_table(results[0]) if len(results) == 1 else submissions_table(results))
    console.print(f"reports in {args.out}: {', '.join(written)}", markup=False)
    if args.fail_under is not None:
        below = [r.submission.name for r in results if r.percent < args.fail_under]
        if below:
            message = f"below --fail-under {args.fail_under:g}%: {', '.join(below)}"
            errors.print(message, markup=False)
            return EXIT_BELOW_THRESHOLD
    return EXIT_OK


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A cancelled CI job gets SIGTERM: stop like on Ctrl-C, killing the test processes
    # (in sessions of their own, no signal reaches them) and removing the work directory.
    signal.signal(signal.SIGTERM, _interrupt)
    # Messages are not wrapped, so that a path in them survives grep.
    console, errors = Console(), Console(stderr=True, soft_wrap=True)
    try:
        return run(args, console, errors)
    except (GraderError, RubricError, OSError) as error:
        errors.print(Text.assemble(("cs336-grade: cannot grade: ", "bold red"), str(error)))
        return EXIT_GRADER_ERROR
    except KeyboardInterrupt:
        errors.print("cs336-grade: interrupted; test processes stopped, no reports written")
        return EXIT_INTERRUPTED
