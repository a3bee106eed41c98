"""What grading one submission produces: a verdict for every component test."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from cs336_harness.rules.called import CALLED_HEADING, Called

# A test checks either behaviour the upstream assignment defines, or behaviour this project
# chose where upstream is silent (the `hardening` marker); only the first earns points.
CONTRACT = "contract"
HARDENING = "hardening"


class Status(StrEnum):
    """One test's verdict. Only PASSED earns points."""

    PASSED = "passed"
    # The output was wrong, the adapter raised, or its reply broke the protocol.
    FAILED = "failed"
    # The adapter is missing or raises NotImplementedError (the harness's one-line failure).
    NOT_IMPLEMENTED = "not implemented"
    # The worker did not answer within the call's or the submission's time.
    TIMED_OUT = "timed out"
    # The worker died (signal, os._exit, interpreter abort) during this test.
    CRASHED = "crashed"
    # The adapters could not be imported, or the test never ran.
    ERROR = "error"


# When a family's failing tests disagree, the family shows the most serious verdict: the one
# a grader most needs to look at.
SEVERITY = (Status.CRASHED, Status.TIMED_OUT, Status.ERROR, Status.FAILED, Status.NOT_IMPLEMENTED)


def family_status(statuses: Iterable[Status]) -> Status:
    """PASSED when every test passed; otherwise the most serious verdict among the others."""
    failing = {s for s in statuses if s != Status.PASSED}
    if not failing:
        return Status.PASSED
    return next(s for s in SEVERITY if s in failing)


@dataclass(frozen=True)
class GradedTest:
    """One component test's verdict. `message` is one line; `details` a few KB at most."""

    nodeid: str
    family: str
    status: Status
    message: str = ""
    details: str = ""
    duration: float = 0.0
    kind: str = CONTRACT
    # How an implementation that computes nothing passes it too (the `trivial` marker's why;
    # "": it does not): it earns only beside a passed test of its family that is not trivial.
    trivial: str = ""
    # A test of what the code costs (the `efficiency` marker), not of what it computes: its
    # family's efficiency points are its tests' (`scoring`).
    efficiency: bool = False
    # An efficiency test's reading, what it measured as a fraction of its limit (1: the
    # limit; None: not one), and the known cause it names where it failed
    # (`cost.causes.CAUSES`).
    cost: float | None = None
    cost_cause: str = ""
    # A verdict that load could have caused: the wall-clock cap of a call, a worker that did
    # not start (a call's CPU time depends little on what runs beside it), or a slow verdict
    # close to its limit (`cost.budgets.LOAD_MARGIN`).
    load_sensitive: bool = False
    # The worker could not start before any of the submission's code ran: the host failed,
    # not the submission (the run ends with an error, `cli`).
    host_failure: bool = False
    # The judge's diagnosis of a wrong output (`cs336_harness.judging.diagnosis`): the ids of the
    # known mistakes it matches, best first, or else the kind of its error's shape. Read from
    # the trusted test's own properties, never from a message a submission could shape.
    diagnosis: tuple[str, ...] = ()
    error_shape: str = ""
    # The wrong component of the same submission it follows from, by the same reading:
    # `family` or `family:mistake` (`diagnosis.root_cause.Cause`); "": none.
    follows_from: str = ""
    # It failed on the submission's own exception: its message is the submission's text, not
    # a comparison's (which may quote the expected output).
    submission_raised: bool = False

    @property
    def name(self) -> str:
        """The test's name without its file: `test_rope[offset_positions]`."""
        return self.nodeid.rpartition("::")[2]


@dataclass(frozen=True)
class SubmissionResult:
    """Every test of one submission, in collection order, and how the grading went."""

    name: str
    # Where it was found, as the reports show it: cleaned (`untrusted`), not for opening.
    path: Path
    tests: tuple[GradedTest, ...]
    # Head and tail of what the judge and the worker printed (capped), for diagnosing.
    output: str
    wall_time: float
    # Worker processes it took: one, plus one per crash or time-out that ended a worker.
    workers: int
    # The most memory one of its workers held at once, all its processes together, as the
    # worker's cgroup measured it from outside (0: graded without cgroups).
    peak_memory: int = 0
    # Whether other submissions were graded beside it ("graded beside 3 other submissions"),
    # which decides whether a time-out is final.
    load: str = ""
    # What the reports must say about how it was graded (a regrade, parts left out).
    notes: tuple[str, ...] = ()
    # The assignment's rules, read from its source (`cs336_harness.rules`): how many uses
    # of what they forbid, the first of them ("path:line: torch.nn.Linear"), and the files
    # that could not be read ("path (why)").
    forbidden_count: int = 0
    forbidden: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    # And what the worker saw it call (`cs336_harness.rules.runtime`): how many distinct
    # sites (family, file, line, name), and the first of them. The submission's own process
    # reported it, so it could hide a call: evidence, not proof.
    called_count: int = 0
    called: tuple[Called, ...] = ()
    # Inputs of its own (`--per-student`): what the reports' `inputs:` line says of them,
    # and their seed; "" and None: the run's.
    inputs: str = ""
    seed: int | None = None


# How every report introduces what the worker saw, beside the static reading.
def called_lines(submission: SubmissionResult) -> list[str]:
    """What the worker saw, as the reports' lines: a heading with the count, then a line per
    site kept, and how many there are when some were left out."""
    count = submission.called_count
    heading = f"{CALLED_HEADING}: " + (
        f"{count} forbidden call site{'s' * (count != 1)}" if count else "no forbidden call seen"
    )
    lines = [heading, *(f"called: {site}" for site in submission.called)]
    if count > len(submission.called):
        lines.append(f"... {count} forbidden call sites in all")
    return lines
