"""What each `cs336-grade` command does, from its typed options (`options`): grade a class,
merge shards, write the class report again, build the autograder, draw inputs."""

from __future__ import annotations

import platform
import secrets
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from cs336_harness.grading import options
from cs336_harness.grading.environments.course_env import (
    WorkerEnvironment,
    built,
    cache_dir,
    for_course,
    own_versions,
)
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.grader import Grader
from cs336_harness.grading.inputs import drawn, family_tables
from cs336_harness.grading.inputs.bundle import build_bundle, remove_tree
from cs336_harness.grading.inputs.student_inputs import named_student, new_secret, student_seed
from cs336_harness.grading.intake.submissions import discover
from cs336_harness.grading.packaging import classroom_workflow, prairielearn_course
from cs336_harness.grading.packaging.autograder import (
    PER_ASSIGNMENT,
    PER_STUDENT,
    image_for,
    unchecked_torch,
)
from cs336_harness.grading.packaging.autograder import build as build_autograder
from cs336_harness.grading.reports import RunInfo, run_environment, write_reports
from cs336_harness.grading.reports.archive import read_archive
from cs336_harness.grading.reports.class_report import write_class_report
from cs336_harness.grading.reports.classroom import runner_names
from cs336_harness.grading.reports.gradescope import DIAGNOSED_BY_OUTPUT
from cs336_harness.grading.reports.table import family_table, print_table, submissions_table
from cs336_harness.grading.results import SubmissionResult
from cs336_harness.grading.sandbox import cgroups, tiers
from cs336_harness.grading.sandbox.user_tier import SharedFolder
from cs336_harness.grading.scoring import Rubric, Score, score
from cs336_harness.grading.shards import merge, shard_positions
from cs336_harness.manifest import manifest_problems
from cs336_harness.paths import REPO_ROOT
from cs336_harness.untrusted import clean_names

EXIT_OK, EXIT_BELOW_THRESHOLD, EXIT_GRADER_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


def grade(asked: options.Grade, console: Console, errors: Console) -> int:
    """Grade the submissions `asked` names, write every report, say how it went; the exit
    status."""
    rubric = asked.grading.rubric
    found = discover(list(asked.submissions))
    # Names go into every report and to the terminal, paths only to the file system.
    names = clean_names(name for name, _ in found)
    everyone = [(name, path) for name, (_, path) in zip(names, found, strict=True)]
    index, count = asked.shard
    positions = shard_positions(len(everyone), index, count)
    submissions = [everyone[i] for i in positions]
    limits = asked.grading.limits
    deadline = None if asked.deadline is None else time.time() + asked.deadline
    given = None if asked.inputs.drawn is None else drawn.read(asked.inputs.drawn)
    seed = _seed(asked, given)
    workroot = Path(tempfile.mkdtemp(prefix="cs336-grade-"))
    grader: Grader | None = None
    sandbox: tiers.Sandbox | None = None
    environment: WorkerEnvironment | None = None
    jobs = min(asked.jobs, len(submissions) or 1)
    groups = cgroups.set_up(jobs)
    try:
        fixtures = _trusted_inputs(asked, seed, workroot, given)
        bundle = build_bundle(REPO_ROOT, fixtures, workroot / "bundle")
        if given is not None and given.tables is not None:
            family_tables.adopt(given.tables, bundle.fixtures, workroot / family_tables.TABLES)
        environment = _environment(asked.grading, errors)
        protected = () if asked.inputs.drawn is None else (asked.inputs.drawn.resolve(),)
        sandbox = tiers.choose(
            asked.grading.sandbox,
            bundle.trusted,
            limits,
            protected,
            asked.self_check,
            lambda line: errors.print(line, markup=False),
            python=environment.python,
            mounts=environment.mounts,
            site=environment.site,
            offered=environment.offered,
        )
        if not groups.enabled:
            errors.print(f"note: {groups.description}", markup=False, soft_wrap=True)
        info = RunInfo(
            sandbox=sandbox.description,
            inputs=_inputs_description(asked, seed, given),
            seed=seed,
            partial=asked.grading.partial,
            visibility=asked.visibility,
            class_size=len(everyone),
            shard=f"{index}/{count}",
            resources=groups.description,
            for_students=asked.for_students,
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
            inputs_for=_per_student(asked, workroot, errors),
            environment=environment,
        )
        graded = _grade_all(grader, submissions, asked.jobs, errors)
    finally:
        if grader is not None:
            grader.stop()
        groups.remove()
        remove_tree(workroot)
        if environment is not None:
            environment.release()
        if sandbox is not None and sandbox.share:
            SharedFolder(Path(sandbox.share)).remove()
    return _report(graded, info, rubric, asked.out, asked.fail_under, console, errors, positions)


def merge_shards(asked: options.Reports, console: Console, errors: Console) -> int:
    """The class's reports from its shards' (`--shard i/n`)."""
    info, graded = merge(list(asked.folders))
    return _report(graded, info, asked.rubric, asked.out, asked.fail_under, console, errors)


def class_report(asked: options.Reports, console: Console) -> int:
    """The class report again, from the grading.json of a finished run or merged shards."""
    path = asked.folders[0] / "grading.json"
    try:
        run, found = read_archive(path)
        partial = bool(run["partial"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        why = f"it has no {error} field" if isinstance(error, KeyError) else str(error)
        raise GraderError(f"cannot read {path}: {why}") from None
    in_order = sorted(found, key=lambda placed: placed[0])
    results = [score(result, asked.rubric, partial) for _, result in in_order]
    asked.out.mkdir(parents=True, exist_ok=True)
    written = write_class_report(results, asked.out, run)
    console.print(f"wrote {', '.join(written)} in {asked.out}", markup=False, soft_wrap=True)
    return EXIT_OK


def autograder(asked: options.Autograder, console: Console) -> int:
    """Write the Gradescope autograder's package."""
    seed = asked.seed if asked.seed is not None else secrets.randbits(31)
    seed = seed if asked.inputs == PER_ASSIGNMENT else None
    secret = (asked.secret or new_secret()) if asked.inputs == PER_STUDENT else None
    grading = asked.grading
    image = image_for(
        grading.course, asked.cuda, asked.memory, seed=seed, timeout=asked.timeout, secret=secret
    )
    warning = unchecked_torch(grading.course)
    if warning:
        console.print(warning, markup=False, soft_wrap=True)
    build_autograder(asked.out, grading.rubric_path, grading.as_arguments(), image=image)
    inputs = {
        PER_STUDENT: "inputs per student, from a secret kept in the zip",
        PER_ASSIGNMENT: f"inputs drawn once, for seed {seed}",
    }.get(asked.inputs, "inputs per submission")
    console.print(
        f"wrote {asked.out} ({inputs}; results within {asked.timeout:g} s): upload it as the "
        "assignment's autograder, with the same autograder timeout in its settings",
        markup=False,
    )
    return EXIT_OK


def classroom(asked: options.Platform, console: Console) -> int:
    """Write the GitHub Classroom workflow."""
    grading = asked.grading
    text = classroom_workflow.workflow(grading.rubric, grading.as_arguments())
    asked.out.parent.mkdir(parents=True, exist_ok=True)
    asked.out.write_text(text)
    runners = runner_names(grading.rubric)
    console.print(
        f"wrote {asked.out} ({len(runners)} runners: {', '.join(runners)}): commit it to the "
        "assignment's template repository, with the rubric as its rubric.toml",
        markup=False,
        soft_wrap=True,
    )
    return EXIT_OK


def prairielearn(asked: options.PrairieLearn, console: Console) -> int:
    """Write a PrairieLearn course's files for the assignment."""
    grading = asked.grading
    question = prairielearn_course.Question(
        grading.course, asked.image, asked.timeout, asked.inputs, asked.secret, asked.question_uuid
    )
    prairielearn_course.build(asked.out, grading.rubric_path, grading.as_arguments(), question)
    inputs = {
        prairielearn_course.PER_VARIANT: "inputs per variant, from a secret kept in the package",
    }.get(question.inputs, "inputs per submission")
    console.print(
        f"wrote {asked.out} ({inputs}; results within {question.timeout:g} s): copy its "
        f"serverFilesCourse/ and questions/ into the course, and build and push the image "
        f"in {asked.out / 'image'} as {question.image}",
        markup=False,
        soft_wrap=True,
    )
    return EXIT_OK


def draw(asked: options.Draw, console: Console) -> int:
    inputs = drawn.draw(asked.seed, asked.out, asked.drawn_for, asked.tables)
    console.print(f"drew the inputs of seed {inputs.seed} into {inputs.root}", markup=False)
    return EXIT_OK


def _seed(asked: options.Grade, given: drawn.DrawnInputs | None) -> int | None:
    """The seed of this run's inputs; None: the stored fixtures, or each student's own.

    Grading submissions draws a new seed by default: the stored fixtures, expected outputs
    included, are in every student's copy, so a submission could carry their answers. The
    self-check grades this checkout's own code, where that cannot matter: it uses the
    stored fixtures, which are what `uv run pytest` checks, and works in the handout."""
    inputs = asked.inputs
    if given is not None:
        return given.seed
    if inputs.per_student:
        return None
    if inputs.stored or (inputs.seed is None and asked.self_check):
        return None
    return inputs.seed if inputs.seed is not None else secrets.randbits(31)


def _trusted_inputs(
    asked: options.Grade, seed: int | None, workroot: Path, given: drawn.DrawnInputs | None
) -> Path | None:
    """The fixtures every submission is graded on; None: each its own (`--per-student`)."""
    if asked.inputs.per_student:
        return None
    if seed is not None and given is None:
        drawn.require_generator(
            "draw fresh inputs: pass --stored-inputs to grade on the stored fixtures"
        )
        # In a process of its own, which imports torch: the grader never does.
        given = drawn.draw_apart(seed, workroot / "fresh-inputs")
    if given is not None:
        return given.fixtures
    problems = manifest_problems(asked.fixtures_dir.resolve())
    if problems:
        raise GraderError("the trusted fixtures fail their manifest:\n  " + "\n  ".join(problems))
    return asked.fixtures_dir.resolve()


def _inputs_description(
    asked: options.Grade, seed: int | None, given: drawn.DrawnInputs | None
) -> str:
    """What the reports' `inputs:` line says of the run's inputs."""
    if given is not None:
        return given.description
    if asked.inputs.per_student:
        return (
            "per student: each submission's drawn from the run's secret and its student "
            "(its own report names its seed)"
        )
    if seed is not None:
        return f"fresh, drawn for seed {seed} (regrade on the same inputs: --seed {seed})"
    if asked.inputs.stored:
        return "stored fixtures (--stored-inputs: public, a submission may carry their answers)"
    return "stored fixtures (the self-check; --seed SEED draws fresh ones)"


def _per_student(
    asked: options.Grade, workroot: Path, errors: Console
) -> Callable[[str], drawn.DrawnInputs] | None:
    """With `--per-student`: the inputs of the submission of a name, drawn for its student
    once, the first time they are asked for (a regrade alone asks again)."""
    inputs = asked.inputs
    if not inputs.per_student:
        return None
    drawn.require_generator("draw inputs per student")
    secret = inputs.secret
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
        student = named_student(inputs.student or name)
        seed = student_seed(secret, student.key)
        with guard:
            lock = locks.setdefault(student.key, threading.Lock())
        with lock:  # two lanes draw two students at once, never one twice
            if student.key not in cache:
                dest = workroot / "inputs" / str(seed)
                cache[student.key] = drawn.draw_apart(seed, dest, student.description)
            return cache[student.key]

    return inputs_for


def _environment(grading: options.Grading, errors: Console) -> WorkerEnvironment:
    """The course's environment, built first where it must be (minutes, once)."""
    course = grading.course
    if not course.admits(platform.python_version(), own_versions()) and not built(course):
        errors.print(
            f"building {course.describe()} with uv, once (it is kept in {cache_dir()})",
            markup=False,
        )
    return for_course(course)


def _environment_line(environment: WorkerEnvironment) -> str:
    """What the reports say of where the submissions ran, and the grader beside it."""
    if environment.own:
        return environment.description
    return f"{environment.description}; the grader: {run_environment.environment()}"


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
                f"grading again alone: {result.name} (timed out, or slow by little, beside others)",
                markup=False,
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


def _report(
    graded: list[SubmissionResult],
    info: RunInfo,
    rubric: Rubric,
    out: Path,
    fail_under: float | None,
    console: Console,
    errors: Console,
    positions: list[int] | None = None,
) -> int:
    results = [score(r, rubric, info.partial) for r in graded]
    # Reports first: they are what CI keeps, even if the terminal goes away mid-table.
    written = write_reports(results, out, info, rubric, positions)
    _warn_about_rubric(rubric, results, errors)
    if results:
        table = family_table(results[0]) if len(results) == 1 else submissions_table(results)
        print_table(console, table)
    # Unwrapped, so that a seed or a path in them survives grep.
    for line in info.lines(graded[0] if len(graded) == 1 else None):
        console.print(line, markup=False, soft_wrap=True)
    console.print(f"reports in {out}: {', '.join(written)}", markup=False, soft_wrap=True)
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
    if fail_under is not None:
        below = [r.submission.name for r in results if r.percent < fail_under]
        if below:
            # Text, not a string: no markup, no `:emoji:` codes read into the names.
            errors.print(Text(f"below --fail-under {fail_under:g}%: {', '.join(below)}"))
            return EXIT_BELOW_THRESHOLD
    return EXIT_OK
