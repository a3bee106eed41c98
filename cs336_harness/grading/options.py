"""What a `cs336-grade` command was asked to do, as typed values: read once from its command
line (`cli`), then handed whole to what runs it (`run`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cs336_harness.grading.environments.courses import Course
from cs336_harness.grading.sandbox.limits import Limits, format_size
from cs336_harness.grading.scoring import Rubric

# `--sandbox`'s default: the strongest tier that works here.
AUTO = "auto"
# A family's credit, where an option overrides the rubric's `[scoring]`.
PARTIAL, ALL_OR_NOTHING = "partial", "all-or-nothing"


@dataclass(frozen=True)
class Grading:
    """How each submission is graded: `cs336-grade`'s options, which `autograder` passes on.
    `course_name` is the course named on the command line (None: the rubric's)."""

    rubric_path: Path
    rubric: Rubric
    credit: str | None
    limits: Limits
    sandbox: str
    course: Course
    course_name: str | None = None

    @property
    def partial(self) -> bool:
        """Credit per case: the rubric's `[scoring]`, unless an option says otherwise."""
        return self.credit == PARTIAL or (self.rubric.partial and self.credit != ALL_OR_NOTHING)

    def as_arguments(self) -> list[str]:
        """These options on `cs336-grade`'s command line, but the rubric (the autograder's
        package carries its own)."""
        limits = self.limits
        sizes = {"--memory-limit": limits.memory, "--output-limit": limits.output}
        arguments = [
            f"--test-timeout={limits.test_timeout!r}",
            f"--submission-timeout={limits.submission_timeout!r}",
            *(f"{name}={format_size(size).replace(' ', '')}" for name, size in sizes.items()),
        ]
        arguments += [] if self.credit is None else [f"--{self.credit}"]
        arguments += [] if self.sandbox == AUTO else [f"--sandbox={self.sandbox}"]
        arguments += [] if self.course_name is None else [f"--course={self.course_name}"]
        return arguments


@dataclass(frozen=True)
class Inputs:
    """What the submissions are graded on: the stored fixtures, inputs drawn for `seed`
    (None: a new one), inputs `cs336-grade draw` drew into `drawn`, or each student's own,
    from `secret` (None: a new one) and the submission's name or `student`."""

    seed: int | None = None
    stored: bool = False
    drawn: Path | None = None
    per_student: bool = False
    secret: str | None = None
    student: str | None = None


@dataclass(frozen=True)
class Grade:
    """`cs336-grade [SUBMISSION ...]`."""

    submissions: tuple[Path, ...]
    out: Path
    grading: Grading
    inputs: Inputs
    jobs: int = 1
    fail_under: float | None = None
    for_students: bool = False
    # Seconds from the start within which the reports must be written.
    deadline: float | None = None
    fixtures_dir: Path = Path("tests/fixtures")
    shard: tuple[int, int] = (1, 1)
    visibility: str | None = None

    @property
    def self_check(self) -> bool:
        """No submission named: the bundled implementation is graded."""
        return not self.submissions


@dataclass(frozen=True)
class Reports:
    """`cs336-grade merge` and `cs336-grade report`: reports of finished runs."""

    folders: tuple[Path, ...]
    out: Path
    rubric: Rubric
    fail_under: float | None = None


@dataclass(frozen=True)
class Autograder:
    """`cs336-grade autograder`: the package, its image and how its runs draw inputs."""

    out: Path
    grading: Grading
    cuda: bool
    # The assignment's container memory on Gradescope, in bytes.
    memory: int
    inputs: str
    seed: int | None
    secret: str | None
    timeout: float


@dataclass(frozen=True)
class Platform:
    """`cs336-grade classroom`: the workflow, written to `out`, grading with these options."""

    out: Path
    grading: Grading


@dataclass(frozen=True)
class PrairieLearn:
    """`cs336-grade prairielearn`: the course's files, written into `out`: the image's name
    on Docker Hub, the question's timeout, how its runs draw inputs, its UUID ("": new)."""

    out: Path
    grading: Grading
    image: str
    timeout: int
    inputs: str
    secret: str | None
    question_uuid: str = ""


@dataclass(frozen=True)
class Draw:
    """`cs336-grade draw`."""

    seed: int
    out: Path
    drawn_for: str = ""
    tables: bool = True
