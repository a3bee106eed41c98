"""`cs336-grade [SUBMISSION ...]`: grade submissions against the trusted tests and rubric.
`cs336-grade merge DIR ... --out DIR`: join the reports of shards (`--shard i/n`).
`cs336-grade autograder --out FILE.zip [OPTIONS]`: a Gradescope autograder that grades
with those options.
`cs336-grade draw --seed S --out DIR`: draw inputs once, for `--drawn-inputs DIR`.
`cs336-grade report DIR`: write the class report again from a finished run's grading.json.

With no argument it grades the bundled implementation. Exit status: 0 when grading
completed, whatever the scores; 1 when a score is below `--fail-under`; 2 when the grader
itself could not run (the sandbox among it); 130 when interrupted (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import platform
import secrets
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from cs336_harness import withheld
from cs336_harness.grading.environments.course_env import (
    WorkerEnvironment,
    built,
    cache_dir,
    for_course,
    own_versions,
)
from cs336_harness.grading.environments.courses import COURSES, by_name
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.grader import Grader
from cs336_harness.grading.inputs import drawn
from cs336_harness.grading.inputs.bundle import Bundle, build_bundle, fresh_fixtures, remove_tree
from cs336_harness.grading.inputs.student_inputs import named_student, new_secret, student_seed
from cs336_harness.grading.intake.submissions import discover
from cs336_harness.grading.packaging.autograder import (
    DEFAULT_PYTHON,
    GRADESCOPE_TIMEOUT,
    INPUTS,
    MATRIX_TORCH,
    PER_ASSIGNMENT,
    PER_STUDENT,
    PER_SUBMISSION,
    PYTHONS,
    Image,
    locked_torch,
)
from cs336_harness.grading.packaging.autograder import build as build_autograder
from cs336_harness.grading.reports import RunInfo, run_environment, write_reports
from cs336_harness.grading.reports.archive import read_archive
from cs336_harness.grading.reports.class_report import write_class_report
from cs336_harness.grading.reports.gradescope import DIAGNOSED_BY_OUTPUT
from cs336_harness.grading.reports.table import family_table, print_table, submissions_table
from cs336_harness.grading.results import SubmissionResult
from cs336_harness.grading.sandbox import cgroups, socket_filter
from cs336_harness.grading.sandbox.limits import Limits, format_size, parse_size
from cs336_harness.grading.sandbox.tiers import BUBBLEWRAP, NONE, USER, Sandbox, check_sandbox
from cs336_harness.grading.sandbox.user_tier import Share
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
from cs336_harness.manifest import manifest_problems
from cs336_harness.paths import REPO_ROOT
from cs336_harness.untrusted import clean_names

T = TypeVar("T")
EXIT_OK, EXIT_BELOW_THRESHOLD, EXIT_GRADER_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
# As in the harness's pytest plugin, which the grader does not import: it imports torch,
# which only the test processes need (6 s here).
DEFAULT_FIXTURES = REPO_ROOT / "tests" / "fixtures"
# --sandbox's default: the strongest tier that works here.
AUTO = "auto"


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
        "--sandbox",
        choices=(AUTO, BUBBLEWRAP, USER, NONE),
        default=AUTO,
        help="how submission code is confined: bubblewrap's namespaces; a user id of its own "
        "without namespaces, as root where namespaces are refused (a Docker container); none; "
        "or the strongest that works here (default, named in every report)",
    )
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="--sandbox none: only for hosts that allow neither tier, on submissions you trust",
    )
    parser.add_argument(
        "--course",
        choices=tuple(COURSES),
        help="the environment submissions run in: this year's handout's Python, torch and "
        "packages (default: the rubric's [environment], the newest course's); uv builds it "
        "once where the grader's own is not it",
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
        help="a directory with cs336_basics/ and tests/adapters.py, a zip or tar archive of one "
        "(make_submission.sh's zip), or a directory of such directories and archives (default: "
        "the bundled implementation)",
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
    inputs.add_argument(
        "--drawn-inputs",
        type=Path,
        metavar="DIR",
        help="grade on the inputs `cs336-grade draw` drew into DIR (their seed is in the reports)",
    )
    inputs.add_argument(
        "--per-student",
        action="store_true",
        help="draw each submission's inputs for its student, from the run's secret and the "
        "submission's name (or --student): a student's resubmissions on the same inputs, two "
        "students never; each report names its seed",
    )
    parser.add_argument(
        "--inputs-secret",
        metavar="SECRET",
        help="with --per-student: the secret the students' seeds are drawn from (default: a "
        "new one, printed for staff); keep it to grade resubmissions on the same inputs",
    )
    parser.add_argument(
        "--student",
        metavar="KEY",
        help="with --per-student and one submission: the student it is graded for, instead "
        "of the submission's name",
    )
    parser.add_argument(
        "--for-students",
        action="store_true",
        help="results.json for students to read (the autograder's): how the run was made and "
        "the trusted processes' logs are printed here, for staff, instead of in its output",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        metavar="SECONDS",
        help="write the reports within SECONDS of the start, whatever the submissions do: "
        "each test family gets a share of the time, and the tests left when it runs out are "
        "reported as not run (Gradescope's autograder timeout, less a margin)",
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
    if (args.inputs_secret is not None or args.student is not None) and not args.per_student:
        parser.error("--inputs-secret and --student are for --per-student")
    if args.student is not None and len(args.submissions) != 1:
        parser.error("--student names the student of one submission")
    if args.deadline is not None and args.deadline <= 0:
        parser.error("--deadline must be a positive number of seconds")
    return args


def _seed(args: argparse.Namespace, inputs: drawn.DrawnInputs | None) -> int | None:
    """The seed of this run's inputs; None: the stored fixtures.

    Grading submissions draws a new seed by default: the stored fixtures, expected outputs
    included, are in every student's copy, so a submission could carry their answers. The
    self-check grades this checkout's own code, where that cannot matter: it uses the
    stored fixtures, which are what `uv run pytest` checks, and works in the handout."""
    if inputs is not None:
        return inputs.seed
    if args.per_student:  # each submission's own (`_per_student`)
        return None
    if args.stored_inputs or (args.seed is None and not args.submissions):
        return None
    return args.seed if args.seed is not None else secrets.randbits(31)


def _trusted_fixtures(
    args: argparse.Namespace, seed: int | None, workroot: Path, inputs: drawn.DrawnInputs | None
) -> Path | None:
    """The fixtures every submission is graded on; None: each its own (`--per-student`)."""
    if args.per_student:
        return None
    if inputs is not None:
        return inputs.fixtures
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
        # Not past a deadline, which the first grading was made to fit.
        if result.load and grader.deadline is None and any(t.load_sensitive for t in result.tests):
            console.print(
                f"grading again alone: {result.name} (timed out beside others)", markup=False
            )
            result = grader.regrade_alone(result, path)
        again.append(result)
    return again


def _per_student(
    args: argparse.Namespace, workroot: Path, errors: Console
) -> Callable[[str], drawn.DrawnInputs] | None:
    """With `--per-student`: the inputs of the submission of a name, drawn for its student
    once, the first time they are asked for (a regrade alone asks again)."""
    if not args.per_student:
        return None
    if not withheld.available(withheld.GENERATOR):
        raise GraderError(
            "this copy has no fixture generator and oracle (a student handout?), so it cannot "
            "draw inputs per student"
        )
    secret = args.inputs_secret
    if secret is None:
        secret = new_secret()
        errors.print(
            f"note: the students' inputs are drawn from the secret {secret}: keep it to grade "
            f"resubmissions on the same inputs (--per-student --inputs-secret {secret})",
            markup=False,
            soft_wrap=True,
        )
    guard, locks, cache = threading.Lock(), {}, {}

    def inputs_for(name: str) -> drawn.DrawnInputs:
        student = named_student(args.student or name)
        seed = student_seed(secret, student.key)
        with guard:
            lock = locks.setdefault(student.key, threading.Lock())
        with lock:  # two lanes draw two students at once, never one twice
            if student.key not in cache:
                dest = workroot / "inputs" / str(seed)
                cache[student.key] = drawn.draw_apart(seed, dest, student.description)
            return cache[student.key]

    return inputs_for


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


def _inputs(args: argparse.Namespace, seed: int | None, inputs: drawn.DrawnInputs | None) -> str:
    if inputs is not None:
        return inputs.description
    if args.per_student:
        return (
            "per student: each submission's drawn from the run's secret and its student "
            "(its own report names its seed)"
        )
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
    for line in info.lines(graded[0] if len(graded) == 1 else None):
        console.print(line, markup=False, soft_wrap=True)
    console.print(f"reports in {args.out}: {', '.join(written)}", markup=False, soft_wrap=True)
    if info.for_students:  # what results.json leaves out, for staff
        for result in graded:
            if any(t.status in DIAGNOSED_BY_OUTPUT for t in result.tests):
                console.print(f"--- {result.name}: output ---\n{result.output}", markup=False)
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


def _protected(args: argparse.Namespace) -> tuple[Path, ...]:
    """Where this run's inputs and expected outputs come from, beside the bundle: what the
    user tier's worker must not read."""
    return () if args.drawn_inputs is None else (args.drawn_inputs.resolve(),)


def _partial(args: argparse.Namespace, rubric: Rubric) -> bool:
    """Credit per case: the rubric's `[scoring]`, unless an option says otherwise."""
    return args.partial or (rubric.partial and not args.all_or_nothing)


def _sandbox(
    args: argparse.Namespace,
    bundle: Bundle,
    limits: Limits,
    errors: Console,
    environment: WorkerEnvironment,
) -> Sandbox:
    """The strongest tier asked for that works here, checked: bubblewrap, else (as root) a
    user of its own without namespaces, each running the worker in `environment`. The
    self-check (no submission named) grades this checkout's own code, which needs no
    confinement: without either it runs unconfined and says so."""
    wanted = NONE if args.no_sandbox else args.sandbox
    runs_in = {"python": environment.python, "mounts": environment.mounts,
               "site": environment.site}  # fmt: skip
    if wanted == NONE:
        return Sandbox(kind=NONE, **runs_in)
    refusals = []
    if wanted in (AUTO, BUBBLEWRAP):
        sandbox = Sandbox(**runs_in)
        try:
            check_sandbox(sandbox, bundle.trusted, limits, _protected(args))
            return sandbox
        except GraderError as error:
            refusals.append(str(error))
    if wanted in (AUTO, USER) and os.geteuid() == 0:
        share = Share.create(bundle.trusted)
        reason = "--sandbox user" if wanted == USER else "namespaces refused here"
        no_filter = socket_filter.unavailable()
        sandbox = Sandbox(
            kind=USER, reason=reason, share=str(share.root), no_filter=no_filter, **runs_in
        )
        try:
            check_sandbox(sandbox, bundle.trusted, limits, _protected(args))
            if refusals:
                errors.print(f"note: {refusals[0]}; the user tier confines it", markup=False)
            return sandbox
        except GraderError as error:
            share.remove()
            refusals.append(f"the user tier: {error}")
    elif wanted == USER:
        refusals.append("the user tier needs root")
    if args.submissions or wanted != AUTO:
        raise GraderError("; ".join(refusals))
    errors.print(f"note: {refusals[0]}; grading this checkout's own code unconfined", markup=False)
    return Sandbox(kind=NONE, reason="this checkout's own code; no sandbox works here", **runs_in)


def _environment_line(environment: WorkerEnvironment) -> str:
    """What the reports say of where the submissions ran, and the grader beside it."""
    if environment.own:
        return environment.description
    return f"{environment.description}; the grader: {run_environment.environment()}"


def _environment(args: argparse.Namespace, rubric: Rubric, errors: Console) -> WorkerEnvironment:
    """The course's environment, built first where it must be (minutes, once)."""
    course = by_name(args.course) if args.course else rubric.course
    if not course.admits(platform.python_version(), own_versions()) and not built(course):
        errors.print(
            f"building {course.describe()} with uv, once (it is kept in {cache_dir()})",
            markup=False,
        )
    return for_course(course)


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
    deadline = None if args.deadline is None else time.time() + args.deadline
    inputs = None if args.drawn_inputs is None else drawn.read(args.drawn_inputs)
    seed = _seed(args, inputs)
    workroot = Path(tempfile.mkdtemp(prefix="cs336-grade-"))
    grader: Grader | None = None
    sandbox: Sandbox | None = None
    jobs = min(args.jobs, len(submissions) or 1)
    groups = cgroups.set_up(jobs)
    try:
        fixtures = _trusted_fixtures(args, seed, workroot, inputs)
        table = inputs.table if inputs is not None else None
        bundle = build_bundle(REPO_ROOT, fixtures, workroot / "bundle", table)
        environment = _environment(args, rubric, errors)
        sandbox = _sandbox(args, bundle, limits, errors, environment)
        if not groups.enabled:
            errors.print(f"note: {groups.description}", markup=False, soft_wrap=True)
        info = RunInfo(
            sandbox=sandbox.description,
            inputs=_inputs(args, seed, inputs),
            seed=seed,
            partial=_partial(args, rubric),
            visibility=args.visibility,
            class_size=len(everyone),
            shard=f"{index}/{count}",
            resources=groups.description,
            for_students=args.for_students,
            environment=_environment_line(environment),
            limits=run_environment.describe_limits(limits),
        )
        grader = Grader(
            bundle,
            limits,
            sandbox,
            workroot,
            jobs,
            groups,
            rubric.rules.policy,
            deadline,
            preload=len(submissions) > 1,
            inputs_for=_per_student(args, workroot, errors),
            environment=environment,
        )
        graded = _grade_all(grader, submissions, args.jobs, errors)
    finally:
        if grader is not None:
            grader.stop()
        groups.remove()
        remove_tree(workroot)
        if sandbox is not None and sandbox.share:
            Share(Path(sandbox.share)).remove()
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


def run_report(argv: list[str], console: Console) -> int:
    parser = argparse.ArgumentParser(
        prog="cs336-grade report",
        description="Write the class report (report.html, report.md) from the grading.json of "
        "a finished run or of merged shards, without grading again.",
    )
    parser.add_argument("directory", type=Path, metavar="DIR", help="a run's --out")
    parser.add_argument("--out", type=Path, metavar="DIR", help="where to write (default: DIR)")
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC, help="points per family")
    args = parser.parse_args(argv)
    path = args.directory / "grading.json"
    try:
        run, found = read_archive(path)
        partial = bool(run["partial"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        why = f"it has no {error} field" if isinstance(error, KeyError) else str(error)
        raise GraderError(f"cannot read {path}: {why}") from None
    rubric = load_rubric(args.rubric)
    in_order = sorted(found, key=lambda placed: placed[0])
    results = [score(result, rubric, partial) for _, result in in_order]
    out = args.out or args.directory
    out.mkdir(parents=True, exist_ok=True)
    written = write_class_report(results, out, run)
    console.print(f"wrote {', '.join(written)} in {out}", markup=False, soft_wrap=True)
    return EXIT_OK


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
    options += [] if args.sandbox == AUTO else [f"--sandbox={args.sandbox}"]
    options += [] if args.course is None else [f"--course={args.course}"]
    return options


def run_autograder(argv: list[str], console: Console) -> int:
    parser = argparse.ArgumentParser(
        prog="cs336-grade autograder",
        description="Write a Gradescope autograder: setup.sh installs this harness in a "
        "pinned environment and draws the inputs, run_autograder grades each submission "
        "with these options; the rubric's [gradescope] table says who sees the results.",
    )
    parser.add_argument("--out", type=Path, default=Path("autograder.zip"), help="the zip to write")
    _grading_options(parser)
    image = parser.add_argument_group("the image setup.sh builds")
    image.add_argument(
        "--python",
        choices=PYTHONS,
        help=f"the Python uv installs (default: the course's, {DEFAULT_PYTHON} for every one)",
    )
    image.add_argument(
        "--torch",
        default="",
        metavar="VERSION",
        help=f"the torch to install, one that .ci/matrix.py checks: {', '.join(MATRIX_TORCH)} "
        f"(default: the course's; uv.lock's is {locked_torch()})",
    )
    image.add_argument(
        "--cuda",
        action="store_true",
        help="PyPI's CUDA build of torch (gigabytes of libraries) instead of the CPU-only one",
    )
    image.add_argument(
        "--inputs",
        choices=INPUTS,
        default=PER_STUDENT,
        help="per-student (default): each run draws the inputs of its student (or group) from "
        "a secret kept in the zip, the same for every resubmission; per-assignment: setup.sh "
        "draws them once, for the seed, and every submission is graded on them; "
        "per-submission: each run draws its own",
    )
    image.add_argument(
        "--seed",
        type=int,
        help="the seed of the per-assignment inputs (default: a new one, kept in the zip)",
    )
    image.add_argument(
        "--inputs-secret",
        metavar="SECRET",
        help="the secret of the per-student inputs (default: a new one, kept in the zip): the "
        "same secret in a rebuilt autograder keeps every student's inputs",
    )
    image.add_argument(
        "--timeout",
        type=float,
        default=GRADESCOPE_TIMEOUT,
        metavar="SECONDS",
        help="the assignment's autograder timeout on Gradescope (default "
        f"{GRADESCOPE_TIMEOUT}): results.json is written before it",
    )
    args = parser.parse_args(argv)
    if args.inputs != PER_ASSIGNMENT and args.seed is not None:
        parser.error("--seed is for --inputs per-assignment")
    if args.inputs != PER_STUDENT and args.inputs_secret is not None:
        parser.error("--inputs-secret is for --inputs per-student")
    if args.timeout <= 0:
        parser.error("--timeout must be a positive number of seconds")
    load_rubric(args.rubric)  # a broken rubric is refused here, not at every submission
    seed = args.seed if args.seed is not None else secrets.randbits(31)
    seed = seed if args.inputs == PER_ASSIGNMENT else None
    secret = (args.inputs_secret or new_secret()) if args.inputs == PER_STUDENT else None
    course = by_name(args.course) if args.course else load_rubric(args.rubric).course
    python, torch = args.python or course.python, args.torch or course.torch_minor
    built = Image(python, torch, args.cuda, seed, args.timeout, secret)
    build_autograder(args.out, args.rubric, _passed_on(args), image=built)
    inputs = {
        PER_STUDENT: "inputs per student, from a secret kept in the zip",
        PER_ASSIGNMENT: f"inputs drawn once, for seed {seed}",
        PER_SUBMISSION: "inputs per submission",
    }[args.inputs]
    console.print(
        f"wrote {args.out} ({inputs}; results within {args.timeout:g} s): upload it as the "
        "assignment's autograder, with the same autograder timeout in its settings",
        markup=False,
    )
    return EXIT_OK


def run_draw(argv: list[str], console: Console) -> int:
    parser = argparse.ArgumentParser(
        prog="cs336-grade draw",
        description="Draw inputs and the oracle's expected outputs once, for grading any "
        "number of submissions on them later (--drawn-inputs DIR).",
    )
    parser.add_argument("--seed", type=int, required=True, help="the seed to draw them for")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="where to write")
    parser.add_argument(
        "--for", dest="drawn_for", default="", metavar="WHOM", help="the student they are for"
    )
    args = parser.parse_args(argv)
    inputs = drawn.draw(args.seed, args.out, args.drawn_for)
    console.print(f"drew the inputs of seed {inputs.seed} into {inputs.root}", markup=False)
    return EXIT_OK


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv[:1] in (["merge"], ["autograder"], ["draw"], ["report"]) else None
    args = None if command else parse_args(argv)
    # Reading a submission's source (the rules, its imports) parses it, and Python warns
    # about what it finds there with a line of that source: the submission's text on the
    # operator's terminal, uncleaned, once per file. The grader never needs those warnings.
    warnings.filterwarnings("ignore", category=SyntaxWarning)
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
        if command == "draw":
            return run_draw(argv[1:], console)
        if command == "report":
            return run_report(argv[1:], console)
        return run(args, console, errors)
    except (GraderError, RubricError, OSError) as error:
        cannot = {
            "autograder": "build the autograder",
            "draw": "draw inputs",
            "report": "write the class report",
        }.get(command, "grade")
        errors.print(Text.assemble((f"cs336-grade: cannot {cannot}: ", "bold red"), str(error)))
        return EXIT_GRADER_ERROR
    except KeyboardInterrupt:
        errors.print("cs336-grade: interrupted; test processes stopped, no reports written")
        return EXIT_INTERRUPTED
