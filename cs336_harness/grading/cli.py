"""`cs336-grade`'s command line, parsed into typed options (`options`) for `run`: grade
submissions (`cs336-grade [SUBMISSION ...]`; none: the bundled implementation), `merge`
shards' reports, build an `autograder`, write a GitHub `classroom` workflow or a
`prairielearn` course's files, `draw` inputs once, write the class `report` again.
Exit status: 0 graded, 1 below `--fail-under`, 2 the grader could not run, 130 interrupted."""

from __future__ import annotations

import argparse
import signal
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.text import Text

from cs336_harness.grading import options, run
from cs336_harness.grading.environments.courses import COURSES, by_name
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.inputs.student_inputs import new_secret
from cs336_harness.grading.options import ALL_OR_NOTHING, PARTIAL
from cs336_harness.grading.packaging.autograder import (
    DEFAULT_PYTHON,
    GRADESCOPE_TIMEOUT,
    INPUTS,
    MATRIX_TORCH,
    PER_ASSIGNMENT,
    PER_STUDENT,
    PYTHONS,
    locked_torch,
)
from cs336_harness.grading.packaging.prairielearn_course import INPUTS as PRAIRIELEARN_INPUTS
from cs336_harness.grading.packaging.prairielearn_course import MOST_SECONDS, PER_VARIANT
from cs336_harness.grading.run import EXIT_GRADER_ERROR, EXIT_INTERRUPTED
from cs336_harness.grading.sandbox.container import GRADESCOPE_MEMORY
from cs336_harness.grading.sandbox.limits import Limits, format_size, parse_size
from cs336_harness.grading.sandbox.tiers import AUTO, BUBBLEWRAP, NONE, USER
from cs336_harness.grading.scoring import (
    DEFAULT_RUBRIC,
    VISIBILITIES,
    RubricError,
    load_rubric,
)
from cs336_harness.grading.shards import parse_shard
from cs336_harness.paths import REPO_ROOT

T = TypeVar("T")
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


def _grading(args: argparse.Namespace) -> options.Grading:
    """`_grading_options`, typed; the rubric read (and refused when broken) here, once."""
    rubric = load_rubric(args.rubric)
    credit = PARTIAL if args.partial else ALL_OR_NOTHING if args.all_or_nothing else None
    limits = Limits(
        args.test_timeout, args.submission_timeout, args.memory_limit, args.output_limit
    )
    course = by_name(args.course) if args.course else rubric.course
    sandbox = NONE if args.no_sandbox else args.sandbox
    return options.Grading(args.rubric, rubric, credit, limits, sandbox, course, args.course)


def _grade(args: argparse.Namespace) -> options.Grade:
    inputs = options.Inputs(
        seed=args.seed,
        stored=args.stored_inputs,
        drawn=args.drawn_inputs,
        per_student=args.per_student,
        secret=args.inputs_secret,
        student=args.student,
    )
    return options.Grade(
        submissions=tuple(args.submissions),
        out=args.out,
        grading=_grading(args),
        inputs=inputs,
        jobs=args.jobs,
        fail_under=args.fail_under,
        for_students=args.for_students,
        deadline=args.deadline,
        fixtures_dir=args.fixtures_dir,
        shard=args.shard,
        visibility=args.visibility,
    )


def parse_merge(argv: list[str]) -> options.Reports:
    parser = argparse.ArgumentParser(
        prog="cs336-grade merge",
        description="Join the reports of shards graded with --shard i/n into the class's.",
    )
    parser.add_argument("shards", nargs="+", type=Path, metavar="DIR", help="a shard's --out")
    parser.add_argument("--out", type=Path, default=Path("grading"), help="report directory")
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC, help="points per family")
    parser.add_argument("--fail-under", type=float, metavar="PERCENT")
    args = parser.parse_args(argv)
    return options.Reports(tuple(args.shards), args.out, load_rubric(args.rubric), args.fail_under)


def parse_report(argv: list[str]) -> options.Reports:
    parser = argparse.ArgumentParser(
        prog="cs336-grade report",
        description="Write the class report (report.html, report.md) from the grading.json of "
        "a finished run or of merged shards, without grading again.",
    )
    parser.add_argument("directory", type=Path, metavar="DIR", help="a run's --out")
    parser.add_argument("--out", type=Path, metavar="DIR", help="where to write (default: DIR)")
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC, help="points per family")
    args = parser.parse_args(argv)
    out = args.out or args.directory
    return options.Reports((args.directory,), out, load_rubric(args.rubric))


def parse_autograder(argv: list[str]) -> options.Autograder:
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
        help=f"the Python uv installs (default: the course's, {DEFAULT_PYTHON} for 2025's and "
        "2026's; the rubric's [environment] may name another)",
    )
    image.add_argument(
        "--torch",
        default="",
        metavar="VERSION",
        help="the torch to install, as 2.11: the course's (the default), which the rubric's "
        f"[environment] may set to any; the harness is checked on {', '.join(MATRIX_TORCH)} "
        f"(.ci/matrix.py) and uv.lock's {locked_torch()}, and the build warns of another",
    )
    image.add_argument(
        "--cuda",
        action="store_true",
        help="PyPI's CUDA build of torch (gigabytes of libraries, more memory per process) "
        "instead of the CPU-only one",
    )
    image.add_argument(
        "--memory",
        type=_argument(parse_size),
        default=GRADESCOPE_MEMORY,
        metavar="SIZE",
        help="the assignment's container memory on Gradescope (default "
        f"{format_size(GRADESCOPE_MEMORY)}, its own): a build that cannot grade in it is "
        "refused, and each run caps a submission's memory to fit beside the grader",
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
    grading = _grading(args)  # a broken rubric is refused here, not at every submission
    course = grading.course
    python, torch = args.python or course.python, args.torch or course.torch_minor
    if (python, torch) != (course.python, course.torch_minor):
        # Submissions run in the course's environment: an image of another Python or torch
        # would have every Gradescope run build it again, without the network or the time.
        parser.error(
            f"Python {python} with torch {torch} is not the environment of "
            f"{course.describe()}, which every Gradescope run would then build again: name "
            "the course that has them (--course) or give the rubric an [environment] table "
            "with them"
        )
    return options.Autograder(
        out=args.out,
        grading=grading,
        cuda=args.cuda,
        memory=args.memory,
        inputs=args.inputs,
        seed=args.seed,
        secret=args.inputs_secret,
        timeout=args.timeout,
    )


def parse_classroom(argv: list[str]) -> options.Platform:
    parser = argparse.ArgumentParser(
        prog="cs336-grade classroom",
        description="Write the GitHub Actions workflow for a GitHub Classroom assignment: on "
        "every push it grades the student's repository with these options, on its stored "
        "fixtures, and hands the points to GitHub Classroom's autograding reporter, a runner "
        "per family of the rubric (or one for the assignment: its [classroom] table).",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(".github/workflows/classroom.yml"),
        help="the workflow file to write, in the template repository",
    )
    _grading_options(parser)
    args = parser.parse_args(argv)
    return options.Platform(args.out, _grading(args))


def parse_prairielearn(argv: list[str]) -> options.PrairieLearn:
    parser = argparse.ArgumentParser(
        prog="cs336-grade prairielearn",
        description="Write what a PrairieLearn course needs to grade the assignment: the "
        "grading package for serverFilesCourse/ (its entry point grading with these options), "
        "a question graded externally, and the recipe of the image (the course's environment) "
        "to build and push to Docker Hub.",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("prairielearn"), help="a new folder to write into"
    )
    parser.add_argument(
        "--image",
        required=True,
        metavar="NAME",
        help="the image's name on Docker Hub, for info.json, e.g. my-course/cs336-grader:2026",
    )
    _grading_options(parser)
    parser.add_argument(
        "--timeout",
        type=int,
        default=MOST_SECONDS,
        metavar="SECONDS",
        help=f"the question's grading timeout (PrairieLearn allows at most {MOST_SECONDS}, the "
        "default): results.json is written before it",
    )
    parser.add_argument(
        "--inputs",
        choices=PRAIRIELEARN_INPUTS,
        default=PER_VARIANT,
        help="per-variant (default): each run draws the inputs of the submission's variant "
        "(each student has their own, every resubmission the same) from a secret kept in "
        "the package; per-submission: each run draws its own",
    )
    parser.add_argument(
        "--inputs-secret",
        metavar="SECRET",
        help="the secret of the per-variant inputs (default: a new one, kept in the package)",
    )
    parser.add_argument(
        "--uuid", help="the question's UUID, to write the files of a question that exists again"
    )
    args = parser.parse_args(argv)
    if not 0 < args.timeout <= MOST_SECONDS:
        parser.error(f"--timeout must be between 1 and {MOST_SECONDS} seconds")
    if args.inputs != PER_VARIANT and args.inputs_secret is not None:
        parser.error("--inputs-secret is for --inputs per-variant")
    secret = (args.inputs_secret or new_secret()) if args.inputs == PER_VARIANT else None
    return options.PrairieLearn(
        args.out, _grading(args), args.image, args.timeout, args.inputs, secret, args.uuid or ""
    )


def parse_draw(argv: list[str]) -> options.Draw:
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
    parser.add_argument(
        "--no-tables",
        dest="tables",
        action="store_false",
        help="leave out the known mistakes' tables (seconds of CPU): a grading then writes a "
        "family's when a failure first asks",
    )
    args = parser.parse_args(argv)
    return options.Draw(args.seed, args.out, args.drawn_for, args.tables)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


# What each subcommand is called in the line that says it could not run.
CANNOT = {"autograder": "build the autograder", "draw": "draw inputs",
          "report": "write the class report", "classroom": "write the workflow",
          "prairielearn": "write the course's files"}  # fmt: skip
# The subcommands; anything else is a grading's arguments.
COMMANDS = ("merge", "autograder", "draw", "report", "classroom", "prairielearn")


def _dispatch(command: str | None, argv: list[str], console: Console, errors: Console) -> int:
    """Parse the command's options (a broken rubric stops it here), then run it."""
    if command == "merge":
        return run.merge_shards(parse_merge(argv), console, errors)
    if command == "autograder":
        return run.autograder(parse_autograder(argv), console)
    if command == "draw":
        return run.draw(parse_draw(argv), console)
    if command == "report":
        return run.class_report(parse_report(argv), console)
    if command == "classroom":
        return run.classroom(parse_classroom(argv), console)
    if command == "prairielearn":
        return run.prairielearn(parse_prairielearn(argv), console)
    return run.grade(_grade(parse_args(argv)), console, errors)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv[:1] and argv[0] in COMMANDS else None
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
        return _dispatch(command, argv[1:] if command else argv, console, errors)
    except (GraderError, RubricError, OSError) as error:
        cannot = CANNOT.get(command, "grade")
        errors.print(Text.assemble((f"cs336-grade: cannot {cannot}: ", "bold red"), str(error)))
        return EXIT_GRADER_ERROR
    except KeyboardInterrupt:
        errors.print("cs336-grade: interrupted; test processes stopped, no reports written")
        return EXIT_INTERRUPTED
