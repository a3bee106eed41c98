"""The grader's pool of lanes: each a judge process grading one submission at a time, from its
copy taken in to its verdict record read back; a lane that stops answering is replaced, and
time-outs and slow verdicts near their limit beside other submissions are graded again
alone (docs/architecture.md, "Lanes")."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from cs336_harness import withheld
from cs336_harness.grading import process_exit
from cs336_harness.grading.environments.course_env import WorkerEnvironment
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.inputs import family_tables
from cs336_harness.grading.inputs.bundle import Bundle, differences, digests, remove_tree
from cs336_harness.grading.inputs.drawn import DrawnInputs
from cs336_harness.grading.intake.absent_imports import absent_imports
from cs336_harness.grading.intake.copy import IntakeRefused, LeftOut, copy_submission
from cs336_harness.grading.intake.declared_env import Declared, declared, packages_note
from cs336_harness.grading.intake.declared_env import note as environment_note
from cs336_harness.grading.intake.submissions import is_archive, unpack_submission
from cs336_harness.grading.judge.job import Job
from cs336_harness.grading.judge.record import Collected, RunRecord, read_record
from cs336_harness.grading.results import Called, GradedTest, Status, SubmissionResult
from cs336_harness.grading.sandbox import cgroups, container, interpreter
from cs336_harness.grading.sandbox.cgroups import Cgroups
from cs336_harness.grading.sandbox.limits import BOOT_WALL, Limits
from cs336_harness.grading.sandbox.tiers import ENV, USER, Sandbox, draw_uid
from cs336_harness.grading.sandbox.user_tier import sweep
from cs336_harness.paths import REPO_ROOT, user_cache
from cs336_harness.rules.findings import called_findings, read_rules
from cs336_harness.rules.policy import DEFAULT as DEFAULT_POLICY
from cs336_harness.rules.policy import Policy
from cs336_harness.untrusted import PATH_CHARS, clean

# What a submission's report keeps of the judge's and the worker's output, head and tail.
OUTPUT_HEAD = 2000
OUTPUT_TAIL = 6000
# A judge has this long past the submission's own limits to finish its report.
JUDGE_SLACK = 60.0
# Under a deadline (`--deadline`): the judge's tests end this long before it (a tenth of it
# at most), and the judge is killed half as long before it, leaving the grader the rest to
# write the reports (a second or two at half a vCPU).
DEADLINE_RESERVE = 20.0


def deadline_reserve(seconds: float) -> float:
    return min(DEADLINE_RESERVE, seconds / 10)


# Paths left out of a copy that a report names; the rest are counted. A submission can
# hold thousands of links or FIFOs, and each note is a line of its report.
NOTES = 20


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:40] or "submission"


def _text(output: bytes) -> str:
    # Bounded in bytes already: cleaning makes a byte at most 4 characters (`\x1b`).
    return clean(output.decode(errors="replace"), None, multiline=True)


def read_excerpt(path: Path, head: int = OUTPUT_HEAD, tail: int = OUTPUT_TAIL) -> str:
    """The first `head` and last `tail` bytes of a log, however large it grew, cleaned."""
    if not path.is_file():
        return ""
    size = path.stat().st_size
    with path.open("rb") as f:
        if size <= head + tail:
            return _text(f.read())
        start = f.read(head)
        f.seek(size - tail)
        end = f.read(tail)
    return (
        _text(start) + f"\n[... {size - head - tail} bytes of output left out ...]\n" + _text(end)
    )


def pytest_args(
    bundle: Bundle,
    job_file: Path,
    select: list[str] | None = None,
    inputs: DrawnInputs | None = None,
    tables: Path | None = None,
) -> list[str]:
    """The judge's pytest command line for one job: every test, or the node ids `select`,
    on the bundle's fixtures or on `inputs` drawn for this submission alone. `tables`: the
    run's folder of known mistakes' tables, each written when a failure first asks for it
    (`judge/known_mistakes.py`), where no table came with the fixtures."""
    trusted = bundle.trusted
    fixtures = bundle.fixtures if inputs is None else inputs.fixtures
    table = bundle.diagnosis_table if inputs is None else None
    if table:
        diagnosis = [f"--diagnosis-table={table}"]
    elif tables is not None:
        diagnosis = ["-p", "cs336_harness.grading.judge.known_mistakes"]
        diagnosis += [f"--diagnosis-dir={tables}", f"--diagnosis-repo={REPO_ROOT}"]
    else:
        diagnosis = []
    return [
        *(str(trusted / nodeid) for nodeid in select or ["tests"]),
        "-c",
        str(trusted / "pytest.ini"),
        "--rootdir",
        str(trusted),
        "-p",
        "cs336_harness.grading.judge.recorder",
        f"--grading-job={job_file}",
        f"--fixtures-dir={fixtures}",
        "-p",
        "no:cacheprovider",
        # No third-party plugin takes part in a graded run (and finding them costs each job
        # a scan of every installed package).
        "--disable-plugin-autoload",
        "-q",
        "--tb=short",
        "--show-capture=no",
        *diagnosis,
    ]


class Lane:
    """One judge process (`judge/process.py`) and the index that gives its workers their user id and
    their cgroups; `lanes` of them share the host."""

    def __init__(
        self,
        index: int,
        bundle: Bundle,
        groups: Cgroups,
        lanes: int,
        home: Path,
        preload: bool = True,
    ):
        self.index = index
        self.bundle = bundle
        # The judge's working directory: the run's private one, never the temp directory.
        self.home = home
        self.preload = preload
        self.process: subprocess.Popen[str] | None = None
        # The user id of the submission it grades now (its workers', the grader being root).
        self.uid: int | None = None
        self._procs = [str(d / "cgroup.procs") for d in groups.judge(index)]
        self._cpus = None if groups.enabled else cgroups.lane_cpus(index, lanes)
        self.cpu_count = cgroups.lane_cpu_count(index, lanes, weighted=groups.enabled)

    def _confine(self) -> None:
        """In the judge's forked child, before exec: join the lane's CPU share."""
        cgroups.join(self._procs)
        if self._cpus is not None:
            os.sched_setaffinity(0, self._cpus)

    def _start(self) -> subprocess.Popen[str]:
        env = {k: v for k, v in ENV.items() if k not in ("HOME", "TMPDIR")}
        env |= {"PATH": os.environ.get("PATH", ENV["PATH"])}
        # The grader's cache, where a failure's table of known mistakes is kept between runs
        # (`family_tables`, `table_cache`).
        env |= {"XDG_CACHE_HOME": str(user_cache())}
        return subprocess.Popen(
            interpreter.command(
                "cs336_harness.grading.judge.process", *["--preload"] * self.preload
            ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=interpreter.environment([str(self.bundle.trusted)], env),
            cwd=self.home,
            start_new_session=True,  # killing its group ends its pytest child too
            preexec_fn=self._confine,
        )

    def run(self, args: list[str], log: Path, timeout: float) -> int | None:
        """Run one job; its pytest exit code, or None when the judge had to be killed."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps({"args": args, "log": str(log)}) + "\n")
            self.process.stdin.flush()
            if select.select([self.process.stdout], [], [], timeout)[0]:
                reply = self.process.stdout.readline()
                if reply:
                    return int(json.loads(reply)["returncode"])
        except (BrokenPipeError, ValueError, KeyError):
            pass
        self.stop()
        return None

    def stop(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.process = None


class Grader:
    """Grades submissions against one bundle; `grade` is safe to call from `jobs` threads."""

    def __init__(
        self,
        bundle: Bundle,
        limits: Limits,
        sandbox: Sandbox,
        workroot: Path,
        jobs: int,
        groups: Cgroups | None = None,
        policy: Policy = DEFAULT_POLICY,
        deadline: float | None = None,
        preload: bool = True,
        inputs_for: Callable[[str], DrawnInputs] | None = None,
        environment: WorkerEnvironment | None = None,
    ):
        """`deadline`: when the reports must be written, in seconds since the epoch;
        `preload`: the judges import what only failure reports need (`judge/process.py`) once, for
        many submissions; `inputs_for`: the inputs of the submission of a name, drawn for it
        alone (`--per-student`; else every one is graded on the bundle's); `environment`:
        where the workers run, which a submission's own pyproject.toml may not ask for."""
        self.bundle = bundle
        self.environment = environment
        self.inputs_for = inputs_for
        # What each submission's own inputs held when drawn, checked after its grading.
        self._drawn: dict[Path, dict[str, str]] = {}
        self.deadline = deadline
        self.reserve = 0.0 if deadline is None else deadline_reserve(deadline - time.time())
        self.policy = policy
        self.limits = limits
        self.sandbox = sandbox
        self.workroot = workroot
        # Where this copy has the catalog, the known mistakes' tables that failures ask for,
        # one per fixtures and family, out of every worker's reach.
        available = withheld.available(withheld.CATALOG)
        self.tables = workroot / family_tables.TABLES if available else None
        self.cgroups = groups or Cgroups(unavailable="not asked for")
        self.lanes = [Lane(i, bundle, self.cgroups, jobs, workroot, preload) for i in range(jobs)]
        self._free: queue.SimpleQueue[Lane] = queue.SimpleQueue()
        for lane in self.lanes:
            self._free.put(lane)
        self._stopped = threading.Event()
        # Which gradings are under way, and the most that ran beside each of them.
        self._lock = threading.Lock()
        self._beside: dict[int, int] = {}
        # The tests a judge collected: the bundle's, so the same for every submission (two
        # lanes may both collect them before either has: the same list, twice).
        self._collected: list[Collected] | None = None
        # The workers' user ids so far: each grading draws one of its own (`draw_uid`).
        self._uids: set[int] = set()

    def stop(self) -> None:
        """Kill every judge (and so every worker): grading is over."""
        self._stopped.set()
        for lane in self.lanes:
            lane.stop()
            if self.sandbox.kind == USER and lane.uid is not None:
                sweep(lane.uid)  # its workers are in no group the judge's kill ends

    def grade(self, name: str, path: Path, select: list[str] | None = None) -> SubmissionResult:
        """Grade one submission: every test, or the node ids in `select`."""
        lane = self._free.get()
        key = id(threading.current_thread())
        with self._lock:
            self._beside[key] = len(self._beside)
            for other in self._beside:
                self._beside[other] = max(self._beside[other], len(self._beside) - 1)
        try:
            if self._stopped.is_set():
                raise GraderError("grading was stopped")
            result = self._grade(lane, name, path, select)
        finally:
            with self._lock:
                beside = self._beside.pop(key)
            self._free.put(lane)
        load = f"graded beside {beside} other submission{'s' * (beside > 1)}" if beside else ""
        return replace(result, load=load)

    def regrade_alone(self, first: SubmissionResult, path: Path) -> SubmissionResult:
        """`first` with its tests whose verdicts load could explain beside other submissions
        (`GradedTest.load_sensitive`) graded again, with every other lane idle; the report
        says so. Call it when no other grading is under way."""
        again = [t.nodeid for t in first.tests if t.load_sensitive]
        if not first.load or not again:
            return first
        retry = self.grade(first.name, path, select=again)
        redone = {t.nodeid: t for t in retry.tests}
        tests = tuple(
            replace(redone[t.nodeid], family=t.family, kind=t.kind) if t.nodeid in redone else t
            for t in first.tests
        )
        timed_out = sum(t.status == Status.TIMED_OUT for t in first.tests if t.load_sensitive)
        slow = len(again) - timed_out
        still = sum(redone[n].status == Status.TIMED_OUT for n in again if n in redone)
        still_slow = sum(redone[n].status != Status.PASSED for n in again if n in redone) - still
        parts = [f"{timed_out} test(s) ran out of wall-clock time"] if timed_out else []
        parts += [f"{slow} efficiency test(s) were slow by little"] if slow else []
        outcome = [f"{still} timed out"] if timed_out else []
        outcome += [f"{still_slow} were slow"] if slow else []
        note = (
            f"{' and '.join(parts)} while it was {first.load}; graded again alone, where "
            f"{' and '.join(outcome)}: these verdicts are the second's"
        )
        return replace(
            first,
            tests=tests,
            output=f"{first.output}\n--- graded again alone ---\n{retry.output}",
            wall_time=first.wall_time + retry.wall_time,
            workers=first.workers + retry.workers,
            peak_memory=max(first.peak_memory, retry.peak_memory),
            notes=(*first.notes, note),
            **called_findings(
                (*first.called, *retry.called), max(first.called_count, retry.called_count)
            ),
        )

    def _grade(
        self, lane: Lane, name: str, path: Path, select: list[str] | None
    ) -> SubmissionResult:
        started = time.monotonic()
        home = Path(tempfile.mkdtemp(prefix=f"{_slug(name)}-", dir=self.workroot))
        inputs = None
        try:
            try:
                left_out, asked = self._take_in(path, home)
            except IntakeRefused as refusal:
                tests = self._refused(lane, home, str(refusal), name)
                output, record, notes = tests[0].message, RunRecord(), ()
                rules = {}
            else:
                inputs = None if self.inputs_for is None else self.inputs_for(name)
                record, tests, output = self._judged(lane, home, left_out, select, inputs)
                notes = _left_out_notes(left_out)
                notes += _absent_notes(home / "submission", self.sandbox.site)
                notes += self._environment_notes(asked)
                rules = read_rules(home / "submission", self.policy) | called_findings(
                    Called(test.family, site_path, line, site_name, count)
                    for test in tests
                    for site_name, site_path, line, count in record.called.get(test.nodeid, ())
                )
        finally:
            remove_tree(home)
        own = {} if inputs is None else {"inputs": inputs.description, "seed": inputs.seed}
        return SubmissionResult(
            name=name,
            path=Path(clean(str(path), PATH_CHARS)),
            tests=tuple(tests),
            output=output,
            wall_time=time.monotonic() - started,
            workers=record.workers,
            peak_memory=record.peak_memory,
            notes=notes,
            **rules,
            **own,
        )

    def _inputs(self, name: str) -> DrawnInputs:
        if self.inputs_for is None:
            raise GraderError("the bundle holds no fixtures and no inputs are drawn per student")
        return self.inputs_for(name)

    def _new_uid(self, lane: Lane) -> int:
        """A user id no grading of this run had, for `lane`'s next judge run."""
        with self._lock:
            lane.uid = draw_uid(self._uids)
            self._uids.add(lane.uid)
        return lane.uid

    @staticmethod
    def _take_in(path: Path, home: Path) -> tuple[list[LeftOut], Declared]:
        """Copy what the submission at `path` contributes into `home`/submission; an
        archive is unpacked first into `home`/unpacked (private: `home` is 0700), which
        goes once copied. What was left out of both, and what its own project files ask
        for (`declared_env`)."""
        if not is_archive(path):
            return copy_submission(path, home / "submission"), declared(path)
        unpacked = home / "unpacked"
        try:
            found, left_out = unpack_submission(path, unpacked)
            return left_out + copy_submission(found, home / "submission"), declared(found)
        finally:
            remove_tree(unpacked)

    def _environment_notes(self, asked: Declared) -> tuple[str, ...]:
        if self.environment is None:
            return ()
        said = (environment_note(asked, self.environment), packages_note(asked, self.environment))
        return tuple(note for note in said if note is not None)

    def _judge(
        self, lane: Lane, home: Path, submission: Path, args: list[str]
    ) -> tuple[RunRecord, list[Collected], int | None]:
        """One judge run on the copy `submission` with pytest `args`: its record, the tests
        it collected, and pytest's exit code."""
        job = Job(
            results=home / "results.jsonl",
            submission=submission,
            harness=self.bundle.trusted,
            worker_log=home / "worker.log",
            lane=lane.index,
            uid=self._new_uid(lane),
            limits=self.limits,
            sandbox=self.sandbox,
            cgroups=self.cgroups,
            policy=self.policy,
            cpus=lane.cpu_count,
            deadline=None if self.deadline is None else self.deadline - self.reserve,
        )
        (home / "job.json").write_text(job.to_json())
        timeout = self.limits.submission_wall + BOOT_WALL + JUDGE_SLACK
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - self.reserve / 2 - time.time())
        returncode = lane.run(args, home / "judge.log", max(timeout, 0.0))
        if self._stopped.is_set():
            raise GraderError("grading was stopped")
        record = read_record(job.results)
        collected = record.collected
        if collected is None:
            raise GraderError(
                f"the judge collected no tests (pytest {returncode}):\n"
                + read_excerpt(home / "judge.log")
            )
        return record, collected, returncode

    def _judged(
        self,
        lane: Lane,
        home: Path,
        left_out: list[LeftOut],
        select: list[str] | None,
        inputs: DrawnInputs | None = None,
    ) -> tuple[RunRecord, list[GradedTest], str]:
        """The record and the tests' verdicts on the copy in `home`, and the output to
        report."""
        args = pytest_args(self.bundle, home / "job.json", select, inputs, self.tables)
        if inputs is not None and inputs.root not in self._drawn:
            self._drawn[inputs.root] = digests(inputs.root)
        kills = container.oom_kills()
        record, collected, returncode = self._judge(lane, home, home / "submission", args)
        # Without cgroups of its own, a worker's memory is bounded per process, below the
        # container's: a process the kernel killed for the container's memory was the
        # grader's to fit (or a submission's many processes together: reported alike).
        killed = 0 if self.cgroups.enabled else container.oom_kills() - kills
        if select is None:
            self._collected = collected
        problems = self.bundle.problems()
        if inputs is not None:
            problems += differences(inputs.root, self._drawn[inputs.root])
        if problems:
            raise GraderError(f"the trusted bundle changed: {'; '.join(problems[:5])}")
        tests = []
        why = self._why_stopped(returncode)
        host = _host_failure(record, returncode, killed)
        for nodeid, family, kind, trivial, efficiency in collected:
            test = record.finished.get(nodeid) or GradedTest(nodeid, family, Status.ERROR, why)
            if host and test.status != Status.PASSED:
                test = replace(test, status=Status.ERROR, message=host, host_failure=True)
            tests.append(
                replace(test, family=family, kind=kind, trivial=trivial, efficiency=efficiency)
            )
        output = "\n".join(
            [
                "--- judge (trusted tests) ---",
                read_excerpt(home / "judge.log"),
                "--- worker (the submission's output) ---",
                read_excerpt(home / "worker.log"),
            ]
        )
        return record, tests, output

    def _why_stopped(self, returncode: int | None) -> str:
        """Why the tests a judge did not finish were not run."""
        deadline = self.deadline
        if returncode is None and deadline is not None and time.time() >= deadline - self.reserve:
            return "not run: grading ran out of time (the deadline) before this test"
        return f"not run: the judge stopped before this test (exit {returncode})"

    def _refused(self, lane: Lane, home: Path, reason: str, name: str) -> list[GradedTest]:
        """Every test an error that gives the intake's reason; no code of the submission
        runs. The tests are those a judge collected; before any judge has, one collects
        them (`--collect-only`) on an empty copy, which costs seconds, not a grading (on
        the inputs of the submission's student where the bundle holds no fixtures)."""
        collected = self._collected
        if collected is None:
            (home / "nothing").mkdir()
            own = None if self.bundle.fixtures.is_dir() else self._inputs(name)
            args = pytest_args(self.bundle, home / "job.json", None, own, self.tables)
            args.append("--collect-only")
            _, collected, _ = self._judge(lane, home, home / "nothing", args)
            self._collected = collected
        message = f"not graded: {clean(reason, PATH_CHARS)}"
        return [
            GradedTest(
                c.nodeid,
                c.family,
                Status.ERROR,
                message,
                kind=c.kind,
                trivial=c.trivial,
                efficiency=c.efficiency,
            )
            for c in collected
        ]


def _host_failure(record: RunRecord, returncode: int | None, killed: int) -> str:
    """Why a judge run's verdicts are the host's failure, not the submission's; "" if not."""
    if killed > 0:
        why = container.too_small(container.memory_limit())
        return f"not graded: the kernel stopped {killed} process(es) for memory: {why}"
    if record.started == 0 and returncode not in (0, 1):
        # Pytest's own codes (interrupted, internal error, usage) or a signal: no test
        # began, so none of the submission's code had run.
        memory = container.memory_limit()
        hint = ""
        if returncode in (None, -signal.SIGKILL) and memory is not None:
            hint = f"; if for memory, {container.too_small(memory)}"
        how = process_exit.describe(returncode)
        return f"not graded: the judge stopped before its first test (it {how}{hint})"
    return ""


def _absent_notes(submission: Path, site: tuple[str, ...]) -> tuple[str, ...]:
    """What the submission imports that the environment the workers run in (its
    site-packages `site`) lacks: the worker stood in for each, so only the tests whose code
    used one failed, naming it."""
    absent = absent_imports(submission, site)
    if not absent:
        return ()
    shown = ", ".join(clean(str(a), PATH_CHARS) for a in absent[:NOTES])
    more = f" and {len(absent) - NOTES} more" if len(absent) > NOTES else ""
    return (
        f"imports modules the grading environment lacks: {shown}{more}; a test whose code "
        "uses one fails, naming it, and the others are graded",
    )


def _left_out_notes(left_out: list[LeftOut]) -> tuple[str, ...]:
    """A note per path left out of the copy, for the first few of however many: names the
    submission chose, so cleaned to one line each."""
    notes = [f"left out of the copy graded: {clean(str(p), PATH_CHARS)}" for p in left_out[:NOTES]]
    if len(left_out) > NOTES:
        notes.append(f"... and {len(left_out) - NOTES} more paths left out of the copy")
    return tuple(notes)
