"""Grade submissions: a pool of judge lanes, each grading one submission at a time.

    grader (this process: no torch, no submission code)
      └─ judge lane × -j        trusted: `judge.py`, torch imported once
           └─ pytest child       trusted: fixtures, comparisons, the verdict record
                └─ worker        the submission's code, in the sandbox (`sandbox.py`)

For one submission the grader copies what it contributes into a private directory, hands
a lane the job, and reads the verdict record the judge wrote (`record.py`). A lane that
stops answering past the submission's time is killed and replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.limits import Limits
from cs336_harness.grading.record import Job, read_record
from cs336_harness.grading.remote import BOOT_TIMEOUT
from cs336_harness.grading.results import GradedTest, Status, SubmissionResult
from cs336_harness.grading.sandbox import ENV, Sandbox, site_packages
from cs336_harness.grading.submissions import copy_submission
from cs336_harness.grading.trusted import Bundle, remove_tree
from cs336_harness.grading.untrusted import clean

# What a submission's report keeps of the judge's and the worker's output, head and tail.
OUTPUT_HEAD = 2000
OUTPUT_TAIL = 6000
# How many files left out of the copy a report names, and how long a path it shows.
NOTES = 20
PATH_CHARS = 500
# A judge has this long past the submission's own limits to finish its report.
JUDGE_SLACK = 60.0


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


def _left_out(skipped: list[str]) -> list[str]:
    """A note per file left out of the copy: names the submission chose, so cleaned, and
    only the first few of however many it made."""
    notes = [f"left out of the copy graded: {clean(p, PATH_CHARS)}" for p in skipped[:NOTES]]
    if len(skipped) > NOTES:
        notes.append(f"... and {len(skipped) - NOTES} more")
    return notes


def pytest_args(bundle: Bundle, job_file: Path) -> list[str]:
    """The judge's pytest command line for one job."""
    trusted = bundle.trusted
    return [
        str(trusted / "tests"),
        "-c",
        str(trusted / "pytest.ini"),
        "--rootdir",
        str(trusted),
        "-p",
        "cs336_harness.grading.record",
        f"--grading-job={job_file}",
        f"--fixtures-dir={bundle.fixtures}",
        "-p",
        "no:cacheprovider",
        "-q",
        "--tb=short",
        "--show-capture=no",
        *([f"--diagnosis-table={bundle.diagnosis_table}"] if bundle.diagnosis_table else []),
    ]


class Lane:
    """One judge process (`judge.py`) and the index that gives its workers their user id."""

    def __init__(self, index: int, bundle: Bundle):
        self.index = index
        self.bundle = bundle
        self.process: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        path = [str(self.bundle.trusted), *site_packages()]
        env = {k: v for k, v in ENV.items() if k not in ("HOME", "TMPDIR")}
        env |= {"PYTHONPATH": os.pathsep.join(path), "PATH": os.environ.get("PATH", ENV["PATH"])}
        return subprocess.Popen(
            [sys.executable, "-S", "-m", "cs336_harness.grading.judge"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
            start_new_session=True,  # killing its group ends its pytest child too
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

    def __init__(self, bundle: Bundle, limits: Limits, sandbox: Sandbox, workroot: Path, jobs: int):
        self.bundle = bundle
        self.limits = limits
        self.sandbox = sandbox
        self.workroot = workroot
        self.lanes = [Lane(i, bundle) for i in range(jobs)]
        self._free: queue.SimpleQueue[Lane] = queue.SimpleQueue()
        for lane in self.lanes:
            self._free.put(lane)
        self._stopped = threading.Event()

    def stop(self) -> None:
        """Kill every judge (and so every worker): grading is over."""
        self._stopped.set()
        for lane in self.lanes:
            lane.stop()

    def grade(self, name: str, path: Path) -> SubmissionResult:
        lane = self._free.get()
        try:
            if self._stopped.is_set():
                raise GraderError("grading was stopped")
            return self._grade(lane, name, path)
        finally:
            self._free.put(lane)

    def _grade(self, lane: Lane, name: str, path: Path) -> SubmissionResult:
        started = time.monotonic()
        home = Path(tempfile.mkdtemp(prefix=f"{_slug(name)}-", dir=self.workroot))
        try:
            skipped = copy_submission(path, home / "submission")
            job = Job(
                results=home / "results.jsonl",
                submission=home / "submission",
                harness=self.bundle.trusted,
                worker_log=home / "worker.log",
                lane=lane.index,
                limits=self.limits,
                sandbox=self.sandbox,
            )
            (home / "job.json").write_text(job.to_json())
            timeout = self.limits.submission_timeout + BOOT_TIMEOUT + JUDGE_SLACK
            args = pytest_args(self.bundle, home / "job.json")
            returncode = lane.run(args, home / "judge.log", timeout)
            if self._stopped.is_set():
                raise GraderError("grading was stopped")
            record = read_record(job.results)
            if record.collected is None:
                raise GraderError(
                    f"the judge collected no tests (pytest {returncode}):\n"
                    + read_excerpt(home / "judge.log")
                )
            problems = self.bundle.problems()
            if problems:
                raise GraderError(f"the trusted bundle changed: {'; '.join(problems[:5])}")
            tests = []
            for nodeid, family, kind in record.collected:
                test = record.finished.get(nodeid) or GradedTest(
                    nodeid,
                    family,
                    Status.ERROR,
                    f"not run: the judge stopped before this test (exit {returncode})",
                )
                tests.append(replace(test, family=family, kind=kind))
            output = "\n".join(
                [
                    *_left_out(skipped),
                    "--- judge (trusted tests) ---",
                    read_excerpt(home / "judge.log"),
                    "--- worker (the submission's output) ---",
                    read_excerpt(home / "worker.log"),
                ]
            )
        finally:
            remove_tree(home)
        return SubmissionResult(
            name=name,
            path=Path(clean(str(path), PATH_CHARS)),
            tests=tuple(tests),
            output=output,
            wall_time=time.monotonic() - started,
            workers=record.workers,
        )
