"""What a submission's own pyproject.toml and uv.lock ask for (Python, torch, other
packages), and the notes its report carries when it is graded elsewhere: the course that
grades it on its own, and the packages it adds that the course's environment lacks.

Both files are the submission's: read with bounds, through no link, and only what parses
as a version specifier is kept (`untrusted` cleans it for the reports all the same).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cs336_harness.grading.environments.course_env import WorkerEnvironment
from cs336_harness.grading.environments.courses import COURSES
from cs336_harness.untrusted import clean

# Larger than any project file a handout has (upstream's uv.lock is about 300 KB).
MAX_BYTES = 4 << 20
SPECIFIER_CHARS = 80
# How many of the packages a pyproject.toml adds a note names.
SHOWN_PACKAGES = 8


@dataclass(frozen=True)
class Declared:
    """A submission's own asks: `requires-python`, its torch requirement and the torch its
    uv.lock holds ("" where it says nothing, or nothing that parses)."""

    python: str = ""
    torch: str = ""
    locked_torch: str = ""
    # The distributions its `[project] dependencies` name (markers that apply here), as
    # canonical names (`rich`, `hydra-core`), in its order.
    packages: tuple[str, ...] = ()


def _toml(path: Path) -> dict:
    """A regular file of at most MAX_BYTES, opened through no link, as TOML; {} otherwise."""
    with contextlib.suppress(OSError, ValueError, UnicodeDecodeError):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as file:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_BYTES:
                return {}
            return tomllib.loads(file.read(MAX_BYTES).decode())
    return {}


def _specifier(text: object) -> str:
    with contextlib.suppress(InvalidSpecifier, TypeError):
        return str(SpecifierSet(str(text)))[:SPECIFIER_CHARS]
    return ""


def declared(submission: Path) -> Declared:
    """What `submission`'s pyproject.toml and uv.lock ask for."""
    project = _toml(submission / "pyproject.toml").get("project", {})
    project = project if isinstance(project, dict) else {}
    torch = ""
    packages: dict[str, None] = {}
    dependencies = project.get("dependencies", [])
    for text in dependencies if isinstance(dependencies, list) else []:
        with contextlib.suppress(InvalidRequirement, TypeError):
            requirement = Requirement(str(text))
            if requirement.marker is not None and not requirement.marker.evaluate():
                continue
            packages[canonicalize_name(requirement.name)] = None
            if requirement.name.lower() == "torch":
                torch = str(requirement.specifier)[:SPECIFIER_CHARS]
    locked = ""
    locked_packages = _toml(submission / "uv.lock").get("package", [])
    for package in locked_packages if isinstance(locked_packages, list) else []:
        if isinstance(package, dict) and package.get("name") == "torch":
            with contextlib.suppress(InvalidVersion, TypeError):
                locked = str(Version(str(package.get("version"))))
    python = _specifier(project.get("requires-python", ""))
    return Declared(python, torch, locked, tuple(packages))


def _admits(specifier: str, version: str) -> bool:
    return not specifier or SpecifierSet(specifier).contains(Version(version), True)


def note(asked: Declared, environment: WorkerEnvironment) -> str | None:
    """The report's note where the grading environment is not what the submission asks
    for, naming the course that is; None where it is."""
    python, torch = environment.python_version, environment.version("torch") or ""
    if not python or not torch:
        return None
    torch_release = Version(torch).release[:2]
    locked_elsewhere = asked.locked_torch and Version(asked.locked_torch).release[:2] != (
        torch_release
    )
    wanted = []
    if not _admits(asked.python, python):
        wanted.append(f"Python {asked.python}")
    if asked.torch and not _admits(asked.torch, torch):
        wanted.append(f"torch {asked.torch}")
    elif not asked.torch and locked_elsewhere:
        wanted.append(f"torch {asked.locked_torch} (its uv.lock)")
    if not wanted:
        return None
    locked = (
        ".".join(map(str, Version(asked.locked_torch).release[:2])) if asked.locked_torch else ""
    )
    fits = [
        name
        for name, course in COURSES.items()
        if _admits(asked.python, f"{course.python}.0")
        and _admits(asked.torch, f"{course.torch_minor}.0")
        and (asked.torch or not locked or locked == course.torch_minor)
    ]
    how = (
        f"grade it on its own with --course {fits[0]}"
        if fits
        else "grade it on its own in an environment of the rubric's ([environment])"
    )
    text = f"written for {', '.join(wanted)}, graded on Python {python} and torch {torch}: {how}"
    return clean(text, None)


def packages_note(asked: Declared, environment: WorkerEnvironment) -> str | None:
    """The report's note where the submission's pyproject.toml adds packages the course's
    environment lacks (its code was written with them at hand); None where it adds none."""
    held = {canonicalize_name(name) for name, _ in environment.versions}
    if not held:
        return None
    lacking = [name for name in asked.packages if name not in held]
    if not lacking:
        return None
    shown = ", ".join(lacking[:SHOWN_PACKAGES])
    more = f" and {len(lacking) - SHOWN_PACKAGES} more" if len(lacking) > SHOWN_PACKAGES else ""
    lacks = "has none of them" if len(lacking) > 1 else "does not have it"
    text = (
        f"your pyproject.toml adds {shown}{more}; the course's environment {lacks} (a test "
        "whose code imports one fails, naming it)"
    )
    return clean(text, None)
