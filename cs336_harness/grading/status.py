"""The verdicts a graded test can get, and how a family's verdict follows from its tests'."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Status(StrEnum):
    """One test's verdict. Only PASSED earns points."""

    PASSED = "passed"
    # The output was wrong, the adapter raised, or the test was skipped by the submission.
    FAILED = "failed"
    # The adapter is missing or raises NotImplementedError (the harness's one-line failure).
    NOT_IMPLEMENTED = "not implemented"
    # pytest-timeout stopped the test, or it hung where only the watchdog or the
    # submission's wall clock could stop it.
    TIMED_OUT = "timed out"
    # The test process died (signal, os._exit, interpreter abort) while this test ran.
    CRASHED = "crashed"
    # The adapters module could not be imported, a fixture or setup step failed, or the
    # run ended before reaching the test for a reason the grader could not pin on it.
    ERROR = "error"
    # The run that produced this result modified the trusted fixtures or tests.
    TAMPERED = "tampered"


# When a family's failing tests disagree, the family shows the most serious verdict: the one
# a grader most needs to look at.
SEVERITY = (
    Status.TAMPERED,
    Status.CRASHED,
    Status.TIMED_OUT,
    Status.ERROR,
    Status.FAILED,
    Status.NOT_IMPLEMENTED,
)


def family_status(statuses: Iterable[Status]) -> Status:
    """PASSED when every test passed; otherwise the most serious verdict among the others."""
    failing = {s for s in statuses if s != Status.PASSED}
    if not failing:
        return Status.PASSED
    return next(s for s in SEVERITY if s in failing)
