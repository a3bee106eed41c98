"""The judge's pytest plugin: it gives the tests remote adapters for the submission its job
names (`-p cs336_harness.grading.judge.recorder --grading-job JOB.json`) and writes the verdict
record (`record`), one event at a time. Under a deadline it shares the time left among the
test families (`FamilyTimeShares`).

PYTEST_DONT_REWRITE: a plugin, not a test, so pytest leaves its asserts as they are
(and does not warn that it was imported before its rewriting began)."""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import IO, Any

import pytest
from _pytest.outcomes import Failed, OutcomeException

from cs336_harness.adapters.loader import (
    AdapterImportFailure,
    NotImplementedFailure,
    SubmissionRaised,
)
from cs336_harness.cost.budgets import PROPERTY as COST_PROPERTY
from cs336_harness.cost.budgets import TooSlow
from cs336_harness.grading.judge import yardstick
from cs336_harness.grading.judge.job import Job
from cs336_harness.grading.judge.record import DETAILS_CHARS, MESSAGE_CHARS
from cs336_harness.grading.judge.remote import (
    BadReply,
    LoadSensitiveTimeout,
    RemoteAdapters,
    WorkerBootFailure,
    WorkerBootTimeout,
    WorkerCrash,
    WorkerTimeout,
)
from cs336_harness.grading.results import CONTRACT, HARDENING, Status
from cs336_harness.grading.sandbox.tiers import Worker


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


def _trivial(item: pytest.Item) -> str:
    marker = item.get_closest_marker("trivial")
    return str(marker.args[0]) if marker and marker.args else ""


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:MESSAGE_CHARS]


class NotRun(Failed):
    """The test's family had used up its share of the deadline before the test began."""


class FamilyTimeShares:
    """The time left before a deadline, shared among the test families still to run.

    When a family begins, it may use twice the mean of what is left per family, `2 L / (m +
    1)` of the `L` seconds left with `m` families to go (itself included), and never more
    than the first family could: what a family leaves unused goes to the ones after it (a
    correct submission's slowest family needs a fraction of its share), while a family that
    hangs costs at most its share wherever it comes, and the last family always keeps a
    third of what is left for it. The first worker's start is not charged to the family that
    waits for it (`RemoteAdapters._ready`)."""

    def __init__(self, deadline: float):
        # The deadline is on the epoch's clock (it crossed processes); measured here on the
        # monotonic one, which no change of the system's time moves.
        self.end = time.monotonic() + (deadline - time.time())
        self.remaining: list[str | None] = []
        self.family: str | None = None
        self.cutoff = self.end
        self.reason = ""
        self.most: float | None = None  # the first family's share

    def collected(self, families: list[str | None]) -> None:
        self.remaining = families

    def begin(self, index: int, family: str | None) -> bool:
        """Test `index` of the collected ones, of `family`, is about to run; whether it is
        the first of its family, which starts the family's share."""
        if family == self.family and index > 0:
            return False
        self.family = family
        now = time.monotonic()
        left = max(self.end - now, 0.0)
        families = len(set(self.remaining[index:])) or 1
        share = 2 * left / (families + 1)
        self.most = share if self.most is None else self.most
        share = min(share, self.most)
        self.cutoff = now + share
        self.reason = f"the {family} tests used up their share of the time to grade ({share:.0f} s)"
        return True


# Failures the remote adapters raise, by the verdict each stands for.
FAILURES = (
    (NotImplementedFailure, Status.NOT_IMPLEMENTED),
    (AdapterImportFailure, Status.ERROR),
    (NotRun, Status.ERROR),
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


def _diagnosis(item: pytest.Item) -> dict[str, Any]:
    """The diagnosis plugin's reading of a failed test, from its properties: the matching
    mistakes' ids, best first, the kind of its error's shape, and the wrong component it
    follows from (`root_cause.Cause.property`)."""
    # Imported here, when the session has loaded it as a plugin: imported with this module,
    # before pytest registers it, pytest could no longer rewrite its asserts (and says so).
    from cs336_harness.judging.diagnosis.plugin import PROPERTY, SHAPE_PROPERTY
    from cs336_harness.judging.diagnosis.root_cause import PROPERTY as FOLLOWS_PROPERTY

    properties = dict(item.user_properties)
    found = str(properties.get(PROPERTY, "none"))
    return {
        "diagnosis": [] if found == "none" else found.split(","),
        "error_shape": str(properties.get(SHAPE_PROPERTY, "")),
        "follows_from": str(properties.get(FOLLOWS_PROPERTY, "")),
    }


class Recorder:
    """Hands the tests remote adapters and writes the events of one pytest session."""

    def __init__(self, job: Job):
        self.job = job
        # Open for the whole session (closed at its end): each event is flushed as it happens.
        self.log: IO[str] = job.results.open("a")
        self.verdicts: dict[str, dict[str, Any]] = {}
        self.adapters: RemoteAdapters | None = None
        self.shares = None if job.deadline is None else FamilyTimeShares(job.deadline)
        self.order: dict[str, int] = {}
        # The grader's private paths, as a report names them: the bundle's files by their
        # path in it (tests/families/test_rope.py), the submission's copy as "submission",
        # a package's file by its path in site-packages (torch/nn/functional.py): the course's
        # view is a new temporary folder each run, which would make two gradings' reports
        # differ.
        bundle = job.harness.parent
        sites = sorted(job.sandbox.site, key=len, reverse=True)
        self.paths = (
            (str(job.submission), "submission"),
            (f"{job.harness}/", ""),
            (f"{bundle}/", ""),
            *((f"{site.rstrip('/')}/", "") for site in sites),
        )

    def _relative(self, text: str) -> str:
        for path, shown in self.paths:
            text = text.replace(path, shown)
        return text

    def write(self, event: str, **fields: Any) -> None:
        self.log.write(json.dumps({"event": event, **fields}) + "\n")
        self.log.flush()

    def pytest_cs336_adapters(self, config: pytest.Config) -> RemoteAdapters:
        job = self.job
        start = partial(job.sandbox.start, job.harness, job.submission, job.lane, job.limits)
        policy = job.policy.to_json()
        self.adapters = RemoteAdapters(
            start_worker=lambda serial: start(
                job.worker_log,
                job.cgroups,
                serial,
                (policy,),
                job.cpus,
                job.uid,
            ),
            limits=job.limits,
            log=job.worker_log,
            on_start=lambda: self.write("worker"),
            on_exit=self._worker_ended,
            yardstick=partial(yardstick.timed, job.sandbox, job.harness),
        )
        if self.shares is not None:
            self.adapters.end = self.shares.end
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
            {
                "nodeid": item.nodeid,
                "family": _family(item),
                "kind": _kind(item),
                "trivial": _trivial(item),
                "efficiency": item.get_closest_marker("efficiency") is not None,
            }
            for item in session.items
        ]
        self.order = {item.nodeid: i for i, item in enumerate(session.items)}
        if self.shares is not None:
            self.shares.collected([_family(item) for item in session.items])
        self.write("collected", tests=tests)
        if self.adapters is not None and session.items and not session.config.option.collectonly:
            self.adapters.start()  # it boots while the session starts its first test

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Under a deadline: start the family's share when its first test begins, and run
        no test once it is used up (before the test's fixtures, which may call the worker)."""
        shares = self.shares
        if shares is None:
            return
        adapters = self.adapters
        if shares.begin(self.order.get(item.nodeid, 0), _family(item)) and adapters is not None:
            adapters.cutoff, adapters.cutoff_reason = shares.cutoff, shares.reason
        # The adapters' cutoff: the first worker's start moves it later.
        cutoff = shares.cutoff if adapters is None or adapters.cutoff is None else adapters.cutoff
        if time.monotonic() >= cutoff:
            raise NotRun(f"not run: {shares.reason}", pytrace=False)

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
        reading = dict(item.user_properties).get(COST_PROPERTY)
        if reading is not None:
            verdict["cost"] = float(reading)
        # The first phase that goes wrong decides (a failed call, not its teardown).
        if (report.failed or report.skipped) and verdict["status"] == Status.PASSED:
            verdict["status"] = classify(call, report)
            verdict["message"] = self._relative(_message(call, report))
            excinfo = call.excinfo
            verdict["load_sensitive"] = excinfo is not None and (
                excinfo.errisinstance((LoadSensitiveTimeout, WorkerBootFailure))
                or (excinfo.errisinstance(TooSlow) and excinfo.value.near_limit)
            )
            verdict["host_failure"] = excinfo is not None and excinfo.errisinstance(
                (WorkerBootFailure, WorkerBootTimeout)
            )
            verdict["submission_raised"] = excinfo is not None and excinfo.errisinstance(
                SubmissionRaised
            )
            if excinfo is not None and excinfo.errisinstance(TooSlow):
                verdict["cost_cause"] = excinfo.value.cause
            verdict["details"] = self._relative(report.longreprtext)[:DETAILS_CHARS]
            verdict |= _diagnosis(item)
        return report

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        called = self.adapters.take_called() if self.adapters is not None else []
        verdict = self.verdicts.pop(nodeid, {}) | ({"called": called} if called else {})
        self.write("finish", nodeid=nodeid, **verdict)

    def pytest_sessionfinish(self) -> None:
        if self.adapters is not None:
            self.adapters.close()
        self.log.close()
