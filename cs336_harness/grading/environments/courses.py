"""The courses' environments by name: the Python, torch and packages each year's handout pins,
so that code written for a course runs as on its students' machines (docs/grading.md,
"The course's environment")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version


@dataclass(frozen=True)
class Course:
    """A course's environment: `python` as "3.12", `torch` a specifier ("~=2.6.0"),
    `packages` the handout's other requirements, as pyproject.toml writes them."""

    name: str
    python: str
    torch: str
    packages: tuple[str, ...] = ()

    @property
    def requirements(self) -> tuple[str, ...]:
        """What its environment installs: torch, the handout's packages, and what the
        harness's worker needs beside them (safetensors, for its protocol)."""
        return (f"torch{self.torch}", *self.packages, "safetensors>=0.4.5")

    @property
    def offered(self) -> tuple[str, ...]:
        """The packages a submission may import, by name: torch and the handout's others
        (what they require comes along, unnamed)."""
        names = {canonicalize_name(Requirement(text).name) for text in self.packages}
        return tuple(sorted(names | {"torch"}))

    @property
    def torch_minor(self) -> str:
        """The torch release it pins, as "2.6" (`cs336-grade autograder --torch`)."""
        pinned = next(iter(SpecifierSet(self.torch))).version
        return ".".join(pinned.split(".")[:2])

    def admits(self, python: str, versions: dict[str, str]) -> bool:
        """Whether an environment of Python `python` ("3.12.1") and these installed
        `versions` (distribution name → version) is this course's."""
        if ".".join(python.split(".")[:2]) != self.python:
            return False
        for text in self.requirements:
            requirement = Requirement(text)
            installed = versions.get(requirement.name.lower())
            if installed is None or not requirement.specifier.contains(Version(installed), True):
                return False
        return True

    def describe(self) -> str:
        label = "the rubric's [environment]" if self.name == CUSTOM else f"course {self.name}"
        return f"{label}: Python {self.python}, torch{self.torch}"


# Upstream's handout (stanford-cs336/assignment1-basics) pyproject.toml, v1.0.2 (2025).
COURSE_2025 = Course(
    "2025",
    python="3.12",
    torch="~=2.6.0",
    packages=(
        "einops>=0.8.1", "einx>=0.3.0", "jaxtyping>=0.3.0", "numpy>=2.2.3", "psutil>=6.1.1",
        "pytest>=8.3.4", "regex>=2024.11.6", "submitit>=1.5.2", "tiktoken>=0.9.0",
        "tqdm>=4.67.1", "wandb>=0.19.7",
    ),
)  # fmt: skip
# The 2026 course's pins (torch 2.11, the packages of its published images).
COURSE_2026 = Course(
    "2026",
    python="3.12",
    torch="~=2.11.0",
    packages=(
        "einops>=0.8.1", "einx>=0.4", "jaxtyping>=0.3", "numpy>=2.4", "psutil>=7",
        "pytest>=8", "regex>=2026.3.32", "submitit>=1.5.2", "tiktoken>=0.12.0", "tqdm>=4.67",
        "wandb>=0.25",
    ),
)  # fmt: skip
COURSES = {course.name: course for course in (COURSE_2025, COURSE_2026)}
# What grades by default: the newest handout's.
NEWEST = COURSE_2026.name
# A course of the rubric's own: its `[environment]` table without `course`.
CUSTOM = "custom"
# The oldest Python 3 minor version a course's environment may have.
OLDEST_MINOR = 11


def from_table(table: object, where: str) -> Course:
    """The course a rubric's `[environment]` table names: `course = "2025"`, or its own
    `python`, `torch` and `packages`. A ValueError says what is wrong."""
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table")
    keys = {"course", "python", "torch", "packages"}
    if set(table) - keys:
        raise ValueError(f"{where} may hold only {', '.join(sorted(keys))}")
    if "course" in table:
        if set(table) != {"course"}:
            raise ValueError(f"{where}: `course` names a whole environment; give it alone")
        return by_name(table["course"])
    missing = sorted({"python", "torch"} - set(table))
    if missing:
        raise ValueError(f"{where} needs `course`, or `python` and `torch`; no {missing[0]}")
    python, torch, packages = table["python"], table["torch"], table.get("packages", [])
    if not isinstance(python, str) or not re.fullmatch(r"3\.\d+", python):
        raise ValueError(f'{where}: python must be a "major.minor" string, got {python!r}')
    if int(python.split(".")[1]) < OLDEST_MINOR:
        # The worker runs with -P (interpreter.py), which Python 3.11 introduced.
        raise ValueError(f"{where}: python {python} is older than the worker runs on (3.11)")
    try:
        SpecifierSet(torch)
        if not isinstance(packages, list):
            raise TypeError
        for package in packages:
            Requirement(package)
    except (InvalidSpecifier, InvalidRequirement, TypeError) as error:
        raise ValueError(
            f'{where}: torch must be a specifier ("~=2.6.0") and packages a list of '
            f"requirements ({error})"
        ) from None
    return Course(CUSTOM, python, torch, tuple(packages))


def by_name(name: object) -> Course:
    if name not in COURSES:
        raise ValueError(f"no course {name!r}: the courses are {', '.join(COURSES)}")
    return COURSES[str(name)]
