"""The judge's pytest plugin: it gives the tests remote adapters for the submission its job
names (`-p cs336_harness.grading.recorder --grading-job JOB.json`) and writes the verdict
record (`record`), one event at a time."""

from __future__ import annotations

import json
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
from cs336_harness.grading.job import Job
from cs336_harness.grading.record import DETAILS_CHARS, MESSAGE_CHARS
from cs336_harness.grading.remote import (
    BadReply,
    LoadSensitiveTimeout,
    RemoteAdapters,
    WorkerBootFailure,
    WorkerBootTimeout,
    WorkerCrash,
    WorkerTimeout,
)
from cs336_harness.grading.results import CONTRACT, HARDENING, Status
from cs336_harness.grading.sandbox import Worker


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
            start_worker=lambda serial: start(job.worker_log, job.cgroups, serial, watch, job.cpus),
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
                (LoadSensitiveTimeout, WorkerBootFailure)
            )
            verdict["host_failure"] = excinfo is not None and excinfo.errisinstance(
                (WorkerBootFailure, WorkerBootTimeout)
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
