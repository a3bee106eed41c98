"""The grader's pytest plugin, loaded in each test process with `-p`: a crash-proof record.

It writes one JSON line per event to `--grading-results` and flushes it at once, so when a
submission kills the process (segfault, os.abort, os._exit) every finished test is on disk
and the one that was running is the one that started but never finished:

    {"event": "collected", "tests": [{"nodeid": ..., "family": ...}, ...]}
    {"event": "start", "nodeid": ...}
    {"event": "finish", "nodeid": ..., "family": ..., "status": ..., "message": ...,
     "details": ..., "duration": ...}

It also selects what runs (only tests with a family marker, or the node ids listed in
`--grading-select`), and arms a watchdog over each test and over the session's start (where
the harness imports the submission): pytest-timeout's SIGALRM cannot interrupt code that
never returns to the interpreter (a C loop holding the GIL), and does not cover imports, so
`faulthandler.dump_traceback_later(exit=True)`, a C thread that needs no GIL, ends the
process `--grading-hard-timeout` seconds in and writes to `--grading-watchdog`.
"""

from __future__ import annotations

import faulthandler
import json
from pathlib import Path
from typing import IO, Any

import pytest
from _pytest.outcomes import Failed, OutcomeException

from cs336_harness.adapter_loader import AdapterImportFailure, NotImplementedFailure
from cs336_harness.grading.status import Status

# Caps on what one test may put in the record: messages come from untrusted code.
MESSAGE_CHARS = 300
DETAILS_CHARS = 4000
# pytest-timeout's failure message (pytest_timeout.PYTEST_FAILURE_MESSAGE) starts so.
TIMEOUT_PREFIX = "Timeout (>"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cs336-grading", "CS336 grader (used by cs336-grade)")
    group.addoption("--grading-results", metavar="FILE", help="write JSON-lines events here")
    group.addoption("--grading-select", metavar="FILE", help="run only the node ids listed")
    group.addoption("--grading-watchdog", metavar="FILE", help="the watchdog's traceback file")
    group.addoption(
        "--grading-hard-timeout",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="end the process when one test runs this long (0: no watchdog)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--grading-results"):
        config.pluginmanager.register(GradingRecorder(config), "cs336-grading-recorder")


def _family(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("family")
    return marker.args[0] if marker and marker.args else None


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:MESSAGE_CHARS]


def classify(call: pytest.CallInfo[None], report: pytest.TestReport) -> Status:
    """The verdict of one failed or skipped phase of a test."""
    if report.skipped:  # a skip earns nothing: the submission could skip its own failures
        return Status.FAILED
    excinfo = call.excinfo
    if excinfo is not None and excinfo.errisinstance(NotImplementedFailure):
        return Status.NOT_IMPLEMENTED
    if excinfo is not None and excinfo.errisinstance(AdapterImportFailure):
        return Status.ERROR
    timed_out = excinfo is not None and excinfo.errisinstance(Failed)
    if timed_out and str(excinfo.value).startswith(TIMEOUT_PREFIX):
        return Status.TIMED_OUT
    return Status.FAILED if call.when == "call" else Status.ERROR


def _message(call: pytest.CallInfo[None], report: pytest.TestReport) -> str:
    if report.skipped:
        # A skip's longrepr is (path, line, reason).
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        return f"skipped: {_first_line(str(reason))}"
    excinfo = call.excinfo
    if excinfo is None:
        return _first_line(report.longreprtext)
    # pytest.fail(...) (a mismatch, "not implemented") is its message alone; any other
    # exception is named: "RuntimeError: mat1 and mat2 shapes cannot be multiplied".
    if isinstance(excinfo.value, OutcomeException):
        return _first_line(str(excinfo.value))
    return _first_line(excinfo.exconly())


class GradingRecorder:
    """Writes the events of one pytest session, one flushed JSON line each."""

    def __init__(self, config: pytest.Config):
        # Open for the whole session (closed at its end): each event is flushed as it happens.
        self.log: IO[str] = Path(config.getoption("--grading-results")).open("a")  # noqa: SIM115
        select = config.getoption("--grading-select")
        self.select: set[str] | None = (
            set(Path(select).read_text().splitlines()) if select else None
        )
        self.hard_timeout: float = config.getoption("--grading-hard-timeout")
        watchdog = config.getoption("--grading-watchdog")
        # faulthandler writes to this file's descriptor from its own thread, at any time.
        self.watchdog: IO[str] | None = Path(watchdog).open("w") if watchdog else None  # noqa: SIM115
        self.verdicts: dict[str, dict[str, Any]] = {}

    def _arm_watchdog(self) -> None:
        if self.watchdog is not None and self.hard_timeout > 0:
            faulthandler.dump_traceback_later(self.hard_timeout, exit=True, file=self.watchdog)

    def write(self, event: str, **fields: Any) -> None:
        self.log.write(json.dumps({"event": event, **fields}) + "\n")
        self.log.flush()

    def _wanted(self, item: pytest.Item) -> bool:
        if self.select is not None:
            return item.nodeid in self.select
        return _family(item) is not None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]):
        kept = [item for item in items if self._wanted(item)]
        dropped = [item for item in items if not self._wanted(item)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self) -> None:
        # Before the harness's own sessionstart, which imports the submission's adapters.
        self._arm_watchdog()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        faulthandler.cancel_dump_traceback_later()
        tests = [{"nodeid": item.nodeid, "family": _family(item)} for item in session.items]
        self.write("collected", tests=tests)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.verdicts[nodeid] = {"status": Status.PASSED, "message": "", "details": ""}
        self.write("start", nodeid=nodeid)
        self._arm_watchdog()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        report: pytest.TestReport = yield
        verdict = self.verdicts.setdefault(item.nodeid, {"status": Status.PASSED})
        verdict["family"] = _family(item)
        verdict["duration"] = verdict.get("duration", 0.0) + report.duration
        # The first phase that goes wrong decides (a failed call, not its teardown).
        if (report.failed or report.skipped) and verdict["status"] == Status.PASSED:
            verdict["status"] = classify(call, report)
            verdict["message"] = _message(call, report)
            verdict["details"] = report.longreprtext[:DETAILS_CHARS]
        return report

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        faulthandler.cancel_dump_traceback_later()
        self.write("finish", nodeid=nodeid, **self.verdicts.pop(nodeid, {}))

    def pytest_sessionfinish(self) -> None:
        self.log.close()
