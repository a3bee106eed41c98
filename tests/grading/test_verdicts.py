"""How one test process's end becomes verdicts: crashes, hangs, time-outs, tampering."""

import signal

import pytest

from cs336_harness.grading.attempt import AttemptOutcome
from cs336_harness.grading.limits import Limits
from cs336_harness.grading.record import RunRecord
from cs336_harness.grading.results import GradedTest
from cs336_harness.grading.status import Status
from cs336_harness.grading.verdicts import settle

pytestmark = pytest.mark.grading

ASKED = ["t::a", "t::b", "t::c"]
FAMILIES = dict.fromkeys(ASKED, "f")
LIMITS = Limits(test_timeout=10, submission_timeout=100, memory=1 << 30)


def _outcome(
    finished: dict[str, Status],
    running: str | None,
    returncode: int = 0,
    out_of_time: bool = False,
    watchdog_fired: bool = False,
    output: str = "",
) -> AttemptOutcome:
    record = RunRecord(
        finished={
            t: GradedTest(t, "f", s, "MemoryError" if t == "t::a" else "")
            for t, s in finished.items()
        },
        running=running,
    )
    return AttemptOutcome(record, returncode, out_of_time, watchdog_fired, output)


def _verdicts(outcome: AttemptOutcome, tampering: list[str] | None = None):
    settled = settle(outcome, ASKED, FAMILIES, LIMITS, tampering or [])
    return {t: (v.status, v.message) for t, v in settled.verdicts.items()}, settled.stop


def test_a_crash_marks_the_running_test_and_leaves_the_rest_for_a_rerun():
    outcome = _outcome(
        {"t::a": Status.FAILED},
        "t::b",
        returncode=-signal.SIGSEGV,
        output="....Fatal Python error: Segmentation fault\n",
    )
    verdicts, stop = _verdicts(outcome)
    assert not stop and set(verdicts) == {"t::a", "t::b"}
    assert verdicts["t::a"] == (Status.FAILED, "MemoryError (memory limit: 1 GiB)")
    assert verdicts["t::b"] == (
        Status.CRASHED,
        "the test process was killed by SIGSEGV during this test (Fatal Python error: "
        "Segmentation fault)",
    )


def test_the_watchdog_times_out_the_running_test():
    verdicts, stop = _verdicts(_outcome({}, "t::a", returncode=1, watchdog_fired=True))
    assert not stop
    assert verdicts["t::a"][0] == Status.TIMED_OUT
    assert "still running after 20 s" in verdicts["t::a"][1]


def test_running_out_of_time_ends_the_submission():
    verdicts, stop = _verdicts(
        _outcome({"t::a": Status.PASSED}, "t::b", returncode=-signal.SIGKILL, out_of_time=True)
    )
    assert stop
    assert verdicts["t::a"][0] == Status.PASSED
    assert verdicts["t::b"] == (
        Status.TIMED_OUT,
        "the submission's time limit (100 s) ran out in this test",
    )
    assert verdicts["t::c"] == (
        Status.TIMED_OUT,
        "not run: the submission's time limit (100 s) was used up",
    )


def test_a_run_that_starts_no_test_stops_with_its_reason():
    verdicts, stop = _verdicts(_outcome({}, None, returncode=7))
    assert stop
    assert set(verdicts.values()) == {
        (Status.ERROR, "not run: the test process exited with code 7 before reaching this test")
    }
    verdicts, _ = _verdicts(_outcome({}, None, returncode=-signal.SIGABRT))
    assert {status for status, _ in verdicts.values()} == {Status.CRASHED}


def test_a_tampering_run_is_void():
    outcome = _outcome({"t::a": Status.PASSED, "t::b": Status.PASSED}, None)
    verdicts, stop = _verdicts(outcome, tampering=["fixtures/x was modified"])
    assert stop
    assert set(verdicts.values()) == {
        (Status.TAMPERED, "void: this run modified the trusted files (fixtures/x was modified)")
    }
