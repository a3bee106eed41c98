"""The verdict record: the judge's pytest plugin writes it, the grader reads it back.

In the judge (`-p cs336_harness.grading.record --grading-job JOB.json`) the plugin gives
the tests a `remote.RemoteAdapters` for the submission named in the job, and writes one
JSON line per event, flushed at once:

    {"event": "collected", "tests": [{"nodeid": ..., "family": ..., "kind": ...}, ...]}
    {"event": "worker"}                       a worker process was started
    {"event": "worker_end", "peak_memory": N} and ended: the most memory its cgroup held
                                              (0: no cgroup)
    {"event": "start", "nodeid": ...}
    {"event": "finish", "nodeid": ..., "status": ..., "message": ..., "details": ...,
     "duration": ..., "called": [[name, path, line, count], ...]}

`kind` is "contract" or "hardening" (the `hardening` marker); `called` (left out when
empty) the forbidden calls the worker reported during the test (`remote.read_called`).
The judge runs only trusted code, so the record is the verdict; the reader still bounds
what it loads, and cleans the text that quotes the submission (`untrusted`): this is where
it enters the grader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

import pytest
from _pytest.outcomes import OutcomeException

from cs336_harness.adapter_loader import (
    AdapterImportFailure,
    NotImplementedFailure,
    SubmissionRaised,
)
from cs336_harness.grading.cgroups import Cgroups
from cs336_harness.grading.limits import Limits
from cs336_harness.grading.remote import (
    BadReply,
    CallSite,
    LoadSensitiveTimeout,
    RemoteAdapters,
    WorkerCrash,
    WorkerTimeout,
    read_called,
)
from cs336_harness.grading.results import CONTRACT, HARDENING, GradedTest, Status
from cs336_harness.grading.sandbox import Sandbox, Worker
from cs336_harness.grading.untrusted import clean
from cs336_harness.rules.policy import DEFAULT as DEFAULT_POLICY
from cs336_harness.rules.policy import Policy

# Caps on what one test puts in the record, and on what the grader keeps of it once cleaned:
# messages quote the submission's exceptions.
MESSAGE_CHARS = 300
DETAILS_CHARS = 4000
MAX_LINE = 64 * 1024


@dataclass(frozen=True)
class Job:
    """What one judge run grades, and how: written by the grader, read by the plugin."""

    results: Path
    submission: Path
    harness: Path
    worker_log: Path
    lane: int
    limits: Limits
    sandbox: Sandbox
    cgroups: Cgroups = field(default_factory=Cgroups)
    # The assignment's rules, for the worker to watch the submission's calls with.
    policy: Policy = DEFAULT_POLICY

    def to_json(self) -> str:
        return json.dumps(
            {
                "results": str(self.results),
                "submission": str(self.submission),
                "harness": str(self.harness),
                "worker_log": str(self.worker_log),
                "lane": self.lane,
                "limits": self.limits.to_dict(),
                "sandbox": asdict(self.sandbox),
                "cgroups": self.cgroups.to_dict(),
                "policy": self.policy.to_json(),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        return cls(
            results=Path(data["results"]),
            submission=Path(data["submission"]),
            harness=Path(data["harness"]),
            worker_log=Path(data["worker_log"]),
            lane=int(data["lane"]),
            limits=Limits(**data["limits"]),
            sandbox=Sandbox(
                **{k: tuple(v) if isinstance(v, list) else v for k, v in data["sandbox"].items()}
            ),
            cgroups=Cgroups.from_dict(data.get("cgroups")),
            policy=Policy.from_json(data["policy"]),
        )


# -- the judge's plugin ---------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cs336-grading", "CS336 grader (used by cs336-grade)")
    group.addoption("--grading-job", metavar="FILE", help="grade the submission this job names")


def pytest_configure(config: pytest.Config) -> None:
    job = config.getoption("--grading-job")
    if job:
        config.pluginmanager.register(Recorder(Job.from_json(Path(job).read_text())), "recorder")


def _family(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("family")
    return marker.args[0] if marker and marker.args else None


def _kind(item: pytest.Item) -> str:
    return HARDENING if item.get_closest_marker("hardening") else CONTRACT


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:MESSAGE_CHARS]


# Failures the remote adapters raise, by the verdict each stands for.
FAILURES = (
    (NotImplementedFailure, Status.NOT_IMPLEMENTED),
    (AdapterImportFailure, Status.ERROR),
    (WorkerTimeout, Status.TIMED_OUT),
    (WorkerCrash, Status.CRASHED),
    (BadReply, Status.FAILED),
)


def classify(call: pytest.CallInfo[None], report: pytest.TestReport) -> Status:
    """The verdict of one failed or skipped phase of a test."""
    if report.skipped:  # no trusted test skips; treat one as what it is, not a pass
        return Status.FAILED
    excinfo = call.excinfo
    for kind, status in FAILURES:
        if excinfo is not None and excinfo.errisinstance(kind):
            return status
    return Status.FAILED if call.when == "call" else Status.ERROR


def _message(call: pytest.CallInfo[None], report: pytest.TestReport) -> str:
    excinfo = call.excinfo
    if excinfo is None:
        return _first_line(report.longreprtext)
    # pytest.fail(...) (a mismatch, "not implemented") and the submission's own exception
    # are their message alone; anything else is named: "KeyError: 'weight'".
    if isinstance(excinfo.value, OutcomeException | SubmissionRaised):
        return _first_line(str(excinfo.value))
    return _first_line(excinfo.exconly())


class Recorder:
    """Hands the tests remote adapters and writes the events of one pytest session."""

    def __init__(self, job: Job):
        self.job = job
        # Open for the whole session (closed at its end): each event is flushed as it happens.
        self.log: IO[str] = job.results.open("a")
        self.verdicts: dict[str, dict[str, Any]] = {}
        self.adapters: RemoteAdapters | None = None

    def write(self, event: str, **fields: Any) -> None:
        self.log.write(json.dumps({"event": event, **fields}) + "\n")
        self.log.flush()

    def pytest_cs336_adapters(self, config: pytest.Config) -> RemoteAdapters:
        job = self.job
        start = partial(job.sandbox.start, job.harness, job.submission, job.lane, job.limits)
        watch = (job.policy.to_json(),)
        self.adapters = RemoteAdapters(
            start_worker=lambda serial: start(job.worker_log, job.cgroups, serial, watch),
            limits=job.limits,
            log=job.worker_log,
            on_start=lambda: self.write("worker"),
            on_exit=self._worker_ended,
        )
        self.adapters.start()  # it boots while the tests are collected
        return self.adapters

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]):
        kept = [item for item in items if _family(item) is not None]
        dropped = [item for item in items if _family(item) is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        tests = [
            {"nodeid": item.nodeid, "family": _family(item), "kind": _kind(item)}
            for item in session.items
        ]
        self.write("collected", tests=tests)

    def _worker_ended(self, worker: Worker) -> None:
        self.write("worker_end", peak_memory=worker.peak_memory())

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.verdicts[nodeid] = {"status": Status.PASSED, "message": "", "details": ""}
        self.write("start", nodeid=nodeid)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        report: pytest.TestReport = yield
        verdict = self.verdicts.setdefault(item.nodeid, {"status": Status.PASSED})
        verdict["duration"] = verdict.get("duration", 0.0) + report.duration
        # The first phase that goes wrong decides (a failed call, not its teardown).
        if (report.failed or report.skipped) and verdict["status"] == Status.PASSED:
            verdict["status"] = classify(call, report)
            verdict["message"] = _message(call, report)
            excinfo = call.excinfo
            verdict["load_sensitive"] = excinfo is not None and excinfo.errisinstance(
                LoadSensitiveTimeout
            )
            verdict["details"] = report.longreprtext[:DETAILS_CHARS]
        return report

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        called = self.adapters.take_called() if self.adapters is not None else []
        verdict = self.verdicts.pop(nodeid, {}) | ({"called": called} if called else {})
        self.write("finish", nodeid=nodeid, **verdict)

    def pytest_sessionfinish(self) -> None:
        if self.adapters is not None:
            self.adapters.close()
        self.log.close()


# -- the grader's reader --------------------------------------------------------------


@dataclass
class RunRecord:
    """The events of one judge run, as far as it got."""

    collected: list[tuple[str, str, str]] | None = None  # (node id, family, kind)
    finished: dict[str, GradedTest] = field(default_factory=dict)
    workers: int = 0
    # The most memory one worker's cgroup held at once (0: no cgroup, or none reported).
    peak_memory: int = 0
    # node id → the forbidden calls the worker reported during that test.
    called: dict[str, list[CallSite]] = field(default_factory=dict)


def _lines(path: Path) -> Iterator[bytes]:
    """Complete lines of at most MAX_LINE bytes; longer ones are skipped, not loaded."""
    if not path.is_file():
        return
    with path.open("rb") as f:
        while line := f.readline(MAX_LINE + 1):
            if not line.endswith(b"\n"):
                while (rest := f.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass  # the tail of an overlong line, or a truncated last line
                continue
            yield line


def read_record(path: Path) -> RunRecord:
    record = RunRecord()
    for line in _lines(path):
        try:
            event = json.loads(line)
            kind = event.get("event")
            if kind == "collected":
                record.collected = [
                    (str(t["nodeid"]), str(t["family"]), str(t.get("kind", CONTRACT)))
                    for t in event["tests"]
                ]
            elif kind == "worker":
                record.workers += 1
            elif kind == "worker_end":
                record.peak_memory = max(record.peak_memory, int(event["peak_memory"]))
            elif kind == "finish":
                test = GradedTest(
                    nodeid=str(event["nodeid"]),
                    family="",  # filled in from `collected` by the grader
                    status=Status(event["status"]),
                    message=clean(str(event.get("message", "")), MESSAGE_CHARS),
                    details=clean(str(event.get("details", "")), DETAILS_CHARS, multiline=True),
                    duration=float(event.get("duration", 0.0)),
                    load_sensitive=event.get("load_sensitive") is True,
                )
                record.finished[test.nodeid] = test
                record.called[test.nodeid] = read_called(event.get("called"))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line cut short by a judge that died mid-write
    return record
