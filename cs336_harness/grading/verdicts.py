"""Turn one test process's outcome into verdicts for the tests it was asked to run.

Finished tests keep the verdict the results plugin recorded. The test that started and
never finished gets "timed out" when a time limit ended the process and "crashed"
otherwise. Whether the remaining tests are rerun is the caller's decision (`Settled.stop`).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, replace

from cs336_harness.grading.attempt import AttemptOutcome
from cs336_harness.grading.limits import Limits, format_size
from cs336_harness.grading.results import GradedTest
from cs336_harness.grading.status import Status

# How an allocation past RLIMIT_DATA reads: Python's, and torch's CPU allocator's.
MEMORY_SIGNS = ("MemoryError", "can't allocate memory")


@dataclass(frozen=True)
class Settled:
    verdicts: dict[str, GradedTest]
    # No rerun can help: the time is up, the run was void, or it made no progress.
    stop: bool


def _exit_description(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _fatal_line(output: str) -> str:
    """The interpreter's last word, e.g. "Fatal Python error: Aborted", if it left one (the
    faulthandler that pytest enables writes it, after the progress dots on the same line)."""
    marker = "Fatal Python error"
    lines = [ln[ln.index(marker) :].strip() for ln in output.splitlines() if marker in ln]
    return f" ({lines[-1][:200]})" if lines else ""


def _with_memory_hint(test: GradedTest, limits: Limits) -> GradedTest:
    """Name the memory limit in the message of a test that ran into it."""
    if limits.memory and any(sign in test.message for sign in MEMORY_SIGNS):
        return replace(test, message=f"{test.message} (memory limit: {format_size(limits.memory)})")
    return test


def death_message(outcome: AttemptOutcome, limits: Limits) -> tuple[Status, str]:
    """The verdict for the test that was running when the process ended."""
    if outcome.out_of_time:
        return (
            Status.TIMED_OUT,
            f"the submission's time limit ({limits.submission_timeout:g} s) ran out in this test",
        )
    if outcome.watchdog_fired:
        return (
            Status.TIMED_OUT,
            f"still running after {limits.hard_timeout:g} s, in code the {limits.test_timeout:g} s "
            "per-test timeout could not interrupt; the process was stopped",
        )
    how = _exit_description(outcome.returncode)
    return Status.CRASHED, f"the test process {how} during this test{_fatal_line(outcome.output)}"


def _not_reached(outcome: AttemptOutcome, limits: Limits) -> tuple[Status, str]:
    """The verdict for tests a run never started, when no rerun will start them either."""
    if outcome.out_of_time:
        return (
            Status.TIMED_OUT,
            f"not run: the submission's time limit ({limits.submission_timeout:g} s) was used up",
        )
    if outcome.watchdog_fired:
        return (
            Status.TIMED_OUT,
            f"not run: the test process hung before reaching this test (importing the "
            f"submission?) and was stopped after {limits.hard_timeout:g} s",
        )
    how = _exit_description(outcome.returncode)
    status = Status.CRASHED if outcome.returncode < 0 else Status.ERROR
    return status, f"not run: the test process {how} before reaching this test"


def settle(
    outcome: AttemptOutcome,
    asked: list[str],
    families: dict[str, str],
    limits: Limits,
    tampering: list[str],
) -> Settled:
    """Verdicts for `asked` (node ids) from one run; `families` maps node id → family."""

    def verdict(nodeid: str, status: Status, message: str) -> GradedTest:
        return GradedTest(nodeid, families[nodeid], status, message)

    if tampering:
        # Nothing this run reported can be trusted, and a rerun would tamper again.
        message = f"void: this run modified the trusted files ({tampering[0]})"
        return Settled({t: verdict(t, Status.TAMPERED, message) for t in asked}, stop=True)
    wanted = set(asked)
    verdicts = {
        t: _with_memory_hint(r, limits) for t, r in outcome.record.finished.items() if t in wanted
    }
    running = outcome.record.running
    if running in wanted:
        verdicts[running] = verdict(running, *death_message(outcome, limits))
    stop = outcome.out_of_time or not verdicts
    if stop:
        status, message = _not_reached(outcome, limits)
        for nodeid in asked:
            verdicts.setdefault(nodeid, verdict(nodeid, status, message))
    return Settled(verdicts, stop)
