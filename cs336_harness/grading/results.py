"""What grading one submission produces: a verdict for every component test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cs336_harness.grading.status import Status


@dataclass(frozen=True)
class GradedTest:
    """One component test's verdict. `message` is one line; `details` a few KB at most."""

    nodeid: str
    family: str
    status: Status
    message: str = ""
    details: str = ""
    duration: float = 0.0

    @property
    def name(self) -> str:
        """The test's name without its file: `test_rope[offset_positions]`."""
        return self.nodeid.rpartition("::")[2]


@dataclass(frozen=True)
class SubmissionResult:
    """Every test of one submission, in collection order, and how the grading went."""

    name: str
    path: Path
    tests: tuple[GradedTest, ...]
    # Head and tail of what the test processes printed (capped), for diagnosing crashes.
    output: str
    wall_time: float
    # Test processes it took: one, plus one per crash or hang that ended a process.
    attempts: int
