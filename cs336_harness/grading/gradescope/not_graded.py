"""The results.json of a run that could not grade its submission for a reason that is not
the submission's (the container's memory, the image, the rubric, the host): Gradescope
shows a student "The autograder failed to execute correctly. Please ensure that your
submission is valid" where a run writes none, which blames them. This one says that the
submission was not graded, that its code is not the cause, and what staff change; the
error itself goes to run_autograder's output, which the rubric keeps for staff
(docs/grading.md, "On Gradescope")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cs336_harness.grading.reports.gradescope import document
from cs336_harness.grading.sandbox.container import SETTING
from cs336_harness.grading.sandbox.limits import format_size
from cs336_harness.grading.scoring import Gradescope

# Where results.json records why, beside Gradescope's fields.
RECORD = "not_graded"
STAFF_OUTPUT = "this run's autograder output (shown to staff) names what failed"


@dataclass(frozen=True)
class Cause:
    """Why a run did not grade: `kind` for scripts, `what` for the student (no path, no
    log, nothing of the inputs), `change` for staff."""

    kind: str
    what: str
    change: str

    def results(self, settings: Gradescope) -> dict[str, Any]:
        """The run's results.json: a score of 0 that says it is not a grade (Gradescope
        needs a score), no tests."""
        output = (
            f"Not graded: the autograder could not grade this submission ({self.what}). "
            "Nothing in your code caused it, and this score is not your grade.\n"
            f"For course staff: {self.change}, then regrade this submission."
        )
        report = document(0.0, output, settings)
        report["tests"] = []
        report["extra_data"] = {RECORD: {"kind": self.kind}}
        return report


def memory(limit: int, needed: int) -> Cause:
    """The container's memory is below what grading needs (known before grading), or the
    kernel stopped a process of the run for it (`needed` 0: more than it has)."""
    at_least = f"to at least {format_size(needed)}" if needed > limit else "above it"
    return Cause(
        "memory",
        f"its container has too little memory: {format_size(limit)}",
        f"raise the assignment's container memory {at_least} ({SETTING})",
    )


def host() -> Cause:
    """The host failed before any of the submission's code ran (its worker could not start,
    a judge died)."""
    return Cause(
        "host",
        "the grading host failed before any of your code ran",
        f"{STAFF_OUTPUT}; fix the image or the setting it names",
    )


def setup() -> Cause:
    """The grader cannot run here at all: the image is not the course's environment, the
    sandbox cannot be set up, the package is broken."""
    return Cause(
        "setup",
        "the autograder's image or settings are broken",
        f"{STAFF_OUTPUT}; fix it, rebuilding the autograder (cs336-grade autograder) where it "
        "names the image, the course's environment or the sandbox",
    )


def rubric() -> Cause:
    """The package's rubric.toml cannot be read."""
    return Cause(
        "rubric",
        "the autograder's rubric cannot be read",
        f"{STAFF_OUTPUT}; fix rubric.toml and upload the autograder again",
    )
