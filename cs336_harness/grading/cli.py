"""`cs336-grade [SUBMISSION ...]`: grade submissions against the trusted tests and rubric.
`cs336-grade merge DIR ... --out DIR`: join the reports of shards (`--shard i/n`).
`cs336-grade autograder --out FILE.zip [OPTIONS]`: a Gradescope autograder that grades
with those options.

With no argument it grades the bundled implementation. Exit status: 0 when grading
completed, whatever the scores; 1 when a score is below `--fail-under`; 2 when the grader
itself could not run (the sandbox among it); 130 when interrupted (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import argparse
import secrets
import signal
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from cs336_harness.grading import cgroups
from cs336_harness.grading.autograder import build as build_autograder
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.grader import Grader
from cs336_harness.grading.limits import Limits, format_size, parse_size
from cs336_harness.grading.reports import RunInfo, write_reports
from cs336_harness.grading.reports.table import family_table, print_table, submissions_table
from cs336_harness.grading.results import SubmissionResult
from cs336_harness.grading.sandbox import Sandbox, check_sandbox
from cs336_harness.grading.scoring import (
    DEFAULT_RUBRIC,
    VISIBILITIES,
    Rubric,
    RubricError,
    Score,
    load_rubric,
    score,
)
from cs336_harness.grading.shards import merge, parse_shard, shard_positions
from cs336_harness.grading.submissions import discover
from cs336_harness.grading.trusted import Bundle, build_bundle, fresh_fixtures, remove_tree
from cs336_harness.manifest import manifest_problems
from cs336_harness.paths import REPO_ROOT
from cs336_harness.untrusted import clean_names

T = TypeVar("T")
EXIT_OK, EXIT_BELOW_THRESHOLD, EXIT_GRADER_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
# As in the harness's pytest plugin, which the grader does not import: it imports torch,
# which only the test processes need (6 s here).
DEFAULT_FIXTURES = REPO_ROOT / "tests" / "fixtures"


def _argument(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse `type` from a parser that raises ValueError with a readable message."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return convert


def _grading_options(parser: argparse.ArgumentParser) -> None:
    """How a submission is graded: options of grading, and of `autograder`, which passes
    them on to the grading of every submission."""
    defaults = Limits()
    parser.add_argument(
        "--rubric",
        type=Path,
        default=DEFAULT_RUBRIC,
        help="points per family, and how Gradescope shows the results",
    )
    credit = parser.add_mutually_exclusive_group()
    credit.add_argument(
        "--partial",
        action="store_true",
        help="credit a family in proportion to its contract tests passed (the default rubric's "
        "[scoring])",
    )
    credit.add_argument(
        "--all-or-nothing",
        action="store_true",
        help="credit a family only when all its contract tests pass",
    )
    parser.add_argument(
        "--test-timeout", type=float, default=defaults.test_timeout, help="seconds per call"
    )
    parser.add_argument(
        "--submission-timeout",
        type=float,
        default=defaults.submission_timeout,
        help="seconds for all of one submission's calls",
    )
    parser.add_argument(
        "--memory-limit",
        type=_argument(parse_size),
        default=defaults.memory,
        metavar="SIZE",
        help="data memory of a submission's process, e.g. 4G; 0: none "
        f"(default {format_size(defaults.memory)})",
    )
    parser.add_argument(
        "--output-limit",
        type=_argument(parse_size),
        default=defaults.output,
        metavar="SIZE",
        help=f"largest file a submission's process may write, its output included "
        f"(default {format_size(defaults.output)})",
    )
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run submission code without bubblewrap (said in every report): only for "
        "hosts that cannot run the sandbox, on submissions you trust",
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
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
    _grading_options(parser)
    parser.add_argument("-j", "--jobs", type=int, default=1, help="submissions graded at once")
    parser.add_argument(
        "--fail-under",
        type=float,
        metavar="PERCENT",
        help="exit 1 when a submission scores below this percentage of the maximum",
    )
    inputs = parser.add_mutually_exclusive_group()
    inputs.add_argument(
        "--seed",
        "--fresh-inputs",
        dest="seed",
        type=int,
        metavar="SEED",
        help="grade on inputs drawn for SEED (default when grading submissions: a new seed "
        "from the operating system's randomness, written into every report)",
    )
    inputs.add_argument(
        "--stored-inputs",
        action="store_true",
        help="grade on the committed fixtures, which every student has (the default of the "
        "self-check, with no submission named)",
    )
    parser.add_argument(
        "--fixtures-dir", type=Path, default=DEFAULT_FIXTURES, help="trusted fixture directory"
    )
    parser.add_argument(
        "--shard",
        type=_argument(parse_shard),
        default=(1, 1),
        metavar="I/N",
        help="grade only the I-th of N shares of the submissions; join with `merge`",
    )
    parser.add_argument(
        "--visibility",
        choices=VISIBILITIES,
        help="Gradescope visibility of the results, over the rubric's [gradescope] "
        "visibility (its per-family ones still apply)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


def _seed(args: argparse.Namespace) -> int | None:
    """The seed of this run's inputs; None: the stored fixtures.

    Grading submissions draws a new seed by default: the stored fixtures, expected outputs
    included, are in every student's copy, so a submission could carry their answers. The
    self-check grades this checkout's own code, where that cannot matter: it uses the
    stored fixtures, which are what `uv run pytest` checks, and works in the handout."""
    if args.stored_inputs or (args.seed is None and not args.submissions):
        return None
    return args.seed if args.seed is not None else secrets.randbits(31)


def _trusted_fixtures(args: argparse.Namespace, seed: int | None, workroot: Path) -> Path:
    if seed is not None:
        return fresh_fixtures(seed, workroot / "fresh-fixtures")
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
            graded = [future.result() for future in futures]
        except BaseException:  # Ctrl-C or a grader error: stop the other submissions too
            for future in futures:
                future.cancel()
            grader.stop()
            raise
    # Every other lane is idle now: tests that ran out of wall-clock time beside another
    # submission are graded again, alone.
    again = []
    for result, (_, path) in zip(graded, submissions, strict=True):
        if result.load and any(t.load_sensitive for t in result.tests):
            console.print(
                f"grading again alone: {result.name} (timed out beside others)", markup=False
            )
            result = grader.regrade_alone(result, path)
        again.append(result)
    return again


def _warn_about_rubric(rubric: Rubric, results: list[Score], console: Console) -> None:
    graded = {f.family for r in results for f in r.families}
    beyond = sorted({f.family for r in results for f in r.beyond})
    if beyond:
        console.print(
            f"[dim]families beyond the rubric, reported apart for 0 points: {', '.join(beyond)}[/]"
        )
    untested = [f.family for f in rubric.families if f.family not in graded]
    if untested:
        console.print(f"[dim]rubric families with no tests (not graded): {', '.join(untested)}[/]")


def _inputs(args: argparse.Namespace, seed: int | None) -> str:
    if seed is not None:
        return f"fresh, drawn for seed {seed} (regrade on the same inputs: --seed {seed})"
    if args.stored_inputs:
        return "stored fixtures (--stored-inputs: public, a submission may carry their answers)"
    return "stored fixtures (the self-check; --seed SEED draws fresh ones)"


def _report(
    graded: list[SubmissionResult],
    info: RunInfo,
    args: argparse.Namespace,
    console: Console,
    errors: Console,
    positions: list[int] | None = None,
) -> int:
    rubric = load_rubric(args.rubric)
    results = [score(r, rubric, info.partial) for r in graded]
    # Reports first: they are what CI keeps, even if the terminal goes away mid-table.
    written = write_reports(results, args.out, info, rubric.gradescope, positions)
    _warn_about_rubric(rubric, results, errors)
    if results:
        table = family_table(results[0]) if len(results) == 1 else submissions_table(results)
        print_table(console, table)
    # Unwrapped, so that a seed or a path in them survives grep.
    for line in info.lines():
        console.print(line, markup=False, soft_wrap=True)
    console.print(f"reports in {args.out}: {', '.join(written)}", markup=False, soft_wrap=True)
    unstarted = [r for r in graded if any(t.host_failure for t in r.tests)]
    if unstarted:
        first = next(t.message for t in unstarted[0].tests if t.host_failure)
        names = ", ".join(r.name for r in unstarted[:5]) + (", ..." if len(unstarted) > 5 else "")
        # Not the submissions' failure, so no verdict on them: the reports hold a 0 that must
        # not stand, and the exit status says so to whatever reads it.
        errors.print(
            Text.assemble(
                ("cs336-grade: not graded, this host failed: ", "bold red"),
                f"{len(unstarted)} of {len(graded)} submissions ({names}): {first}. Their "
                "reports score it 0; fix the host (the message says how it failed), then grade "
                "them again",
            )
        )
        return EXIT_GRADER_ERROR
    if args.fail_under is not None:
        below = [r.submission.name for r in results if r.percent < args.fail_under]
        if below:
            # Text, not a string: no markup, no `:emoji:` codes read into the names.
            errors.print(Text(f"below --fail-under {args.fail_under:g}%: {', '.join(below)}"))
            return EXIT_BELOW_THRESHOLD
    return EXIT_OK


def _partial(args: argparse.Namespace, rubric: Rubric) -> bool:
    """Credit per case: the rubric's `[scoring]`, unless an option says otherwise."""
    return args.partial or (rubric.partial and not args.all_or_nothing)


def _sandbox(args: argparse.Namespace, bundle: Bundle, limits: Limits, errors: Console) -> Sandbox:
    """The sandbox, checked. The self-check (no submission named) grades this checkout's own
    code, which needs no confinement: without bubblewrap it runs unconfined and says so."""
    if args.no_sandbox:
        return Sandbox(enabled=False)
    sandbox = Sandbox()
    try:
        check_sandbox(sandbox, bundle.trusted, limits)
    except GraderError as error:
        if args.submissions:
            raise
        errors.print(f"note: {error}; grading this checkout's own code unconfined", markup=False)
        return Sandbox(enabled=False, reason="this checkout's own code; bubblewrap unavailable")
    return sandbox


def run(args: argparse.Namespace, console: Console, errors: Console) -> int:
    rubric = load_rubric(args.rubric)  # a broken rubric stops the run before any grading
    found = discover(args.submissions)
    # Names go into every report and to the terminal, paths only to the file system.
    names = clean_names(name for name, _ in found)
    everyone = [(name, path) for name, (_, path) in zip(names, found, strict=True)]
    index, count = args.shard
    positions = shard_positions(len(everyone), index, count)
    submissions = [everyone[i] for i in positions]
    limits = Limits(
        args.test_timeout, args.submission_timeout, args.memory_limit, args.output_limit
    )
    seed = _seed(args)
    workroot = Path(tempfile.mkdtemp(prefix="cs336-grade-"))
    grader: Grader | None = None
    jobs = min(args.jobs, len(submissions) or 1)
    groups = cgroups.set_up(jobs)
    try:
        fixtures = _trusted_fixtures(args, seed, workroot)
        bundle = build_bundle(REPO_ROOT, fixtures, workroot / "bundle")
        sandbox = _sandbox(args, bundle, limits, errors)
        if not groups.enabled:
            errors.print(f"note: {groups.description}", markup=False, soft_wrap=True)
        info = RunInfo(
            sandbox=sandbox.description,
            inputs=_inputs(args, seed),
            seed=seed,
            partial=_partial(args, rubric),
            visibility=args.visibility,
            class_size=len(everyone),
            shard=f"{index}/{count}",
            resources=groups.description,
        )
        grader = Grader(bundle, limits, sandbox, workroot, jobs, groups, rubric.rules.policy)
        graded = _grade_all(grader, submissions, args.jobs, errors)
    finally:
        if grader is not None:
            grader.stop()
        groups.remove()
        remove_tree(workroot)
    return _report(graded, info, args, console, errors, positions)


def run_merge(argv: list[str], console: Console, errors: Console) -> int:
    parser = argparse.ArgumentParser(
        prog="cs336-grade merge",
        description="Join the reports of shards graded with --shard i/n into the class's.",
    )
    parser.add_argument("shards", nargs="+", type=Path, metavar="DIR", help="a shard's --out")
    parser.add_argument("--out", type=Path, default=Path("grading"), help="report directory")
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC, help="points per family")
    parser.add_argument("--fail-under", type=float, metavar="PERCENT")
    args = parser.parse_args(argv)
    info, graded = merge(args.shards)
    return _report(graded, info, args, console, errors)


def _passed_on(args: argparse.Namespace) -> list[str]:
    """`_grading_options` as cs336-grade options, but the rubric: the package carries it."""
    sizes = {"--memory-limit": args.memory_limit, "--output-limit": args.output_limit}
    options = [
        f"--test-timeout={args.test_timeout!r}",
        f"--submission-timeout={args.submission_timeout!r}",
        *(f"{name}={format_size(size).replace(' ', '')}" for name, size in sizes.items()),
    ]
    options += ["--partial"] * args.partial + ["--all-or-nothing"] * args.all_or_nothing
    options += ["--no-sandbox"] * args.no_sandbox
    return options


def run_autograder(argv: list[str], console: Console) -> int:
    parser = argparse.ArgumentParser(
        prog="cs336-grade autograder",
        description="Write a Gradescope autograder: setup.sh installs this harness and its "
        "locked environment, run_autograder grades each submission on inputs drawn for it, "
        "with these options; the rubric's [gradescope] table says who sees the results.",
    )
    parser.add_argument("--out", type=Path, default=Path("autograder.zip"), help="the zip to write")
    _grading_options(parser)
    args = parser.parse_args(argv)
    load_rubric(args.rubric)  # a broken rubric is refused here, not at every submission
    build_autograder(args.out, args.rubric, _passed_on(args))
    console.print(f"wrote {args.out}: upload it as the assignment's autograder", markup=False)
    return EXIT_OK


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv[:1] in (["merge"], ["autograder"]) else None
    args = None if command else parse_args(argv)
    # A cancelled CI job gets SIGTERM: stop like on Ctrl-C, killing the test processes
    # (in sessions of their own, no signal reaches them) and removing the work directory.
    signal.signal(signal.SIGTERM, _interrupt)
    # Messages are not wrapped, so that a path in them survives grep.
    console, errors = Console(), Console(stderr=True, soft_wrap=True)
    try:
        if command == "merge":
            return run_merge(argv[1:], console, errors)
        if command == "autograder":
            return run_autograder(argv[1:], console)
        return run(args, console, errors)
    except (GraderError, RubricError, OSError) as error:
        cannot = "build the autograder" if command == "autograder" else "grade"
        errors.print(Text.assemble((f"cs336-grade: cannot {cannot}: ", "bold red"), str(error)))
        return EXIT_GRADER_ERROR
    except KeyboardInterrupt:
        errors.print("cs336-grade: interrupted; test processes stopped, no reports written")
        return EXIT_INTERRUPTED
