"""The environment a course's submissions run in: the grader's own interpreter where it is the
course's, its packages seen through the course's view (`course_view`: the course's
distributions alone), else one uv builds once into the user's cache. Only the worker runs
there (the judges stay on the grader's), reading what `WorkerEnvironment.mounts` names, so
a built one is readable by every user (docs/grading.md, "The course's environment")."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from cs336_harness.grading.environments import course_view
from cs336_harness.grading.environments.courses import Course
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.sandbox.interpreter import python_paths, site_packages
from cs336_harness.paths import REPO_ROOT, user_cache

# What the reports list of an environment's packages.
SHOWN = ("torch", "numpy")
# Run in an environment's interpreter: where it lives and what it holds. Prints JSON.
QUERY = """
import json, platform, sys, sysconfig
from importlib import metadata
paths = sysconfig.get_paths()
print(json.dumps({
    "python": platform.python_version(),
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "site": list(dict.fromkeys([paths["purelib"], paths["platlib"]])),
    "versions": {d.metadata["Name"].lower(): d.version for d in metadata.distributions()},
}))
"""
COMPLETE = ".complete"
# A handout installs its project, so upstream's cs336_basics/__init__.py asks
# `importlib.metadata.version("cs336_basics")`; the grader's own environment answers with its
# project's metadata, a built one with the same, written as metadata alone (no code).
PACKAGE = "cs336_basics"
METADATA = "Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"


@dataclass(frozen=True)
class WorkerEnvironment:
    """Where a worker runs: its interpreter, what it must read (`mounts`), its
    site-packages, and what the reports say of it."""

    python: str
    mounts: tuple[str, ...]
    site: tuple[str, ...]
    description: str
    # Its Python ("3.12.1") and what it holds (distribution name → version).
    python_version: str = ""
    versions: tuple[tuple[str, str], ...] = ()
    # The grader's own environment, not one built for the course.
    own: bool = True
    # Where the grader's own is seen through the course's view: its folder, which `release`
    # removes; "": none.
    view: str = ""
    # The course's packages by name, which a message about a module it lacks lists.
    offered: tuple[str, ...] = ()

    def version(self, name: str) -> str | None:
        return dict(self.versions).get(name)

    def release(self) -> None:
        """Remove what was made for this run (the view's folder of links)."""
        if self.view:
            shutil.rmtree(self.view, ignore_errors=True)


def _describe(course: Course, python: str, versions: dict[str, str], where: str) -> str:
    shown = ", ".join(f"{name} {versions.get(name, 'absent')}" for name in SHOWN)
    label = f"course {course.name}" if course.name != "custom" else "the rubric's [environment]"
    return f"{label}: Python {python}, {shown} ({where})"


def own_versions() -> dict[str, str]:
    """Each installed distribution's version, by lower-case name, in the grader's own
    environment (read once a process: every distribution's metadata, 60 ms)."""
    return dict(_own_versions())


@cache
def _own_versions() -> tuple[tuple[str, str], ...]:
    return tuple((d.metadata["Name"].lower(), d.version) for d in metadata.distributions())


def cache_dir() -> Path:
    return user_cache() / "cs336-grade" / "courses"


def _key(course: Course) -> str:
    # The package's metadata is part of what is built: a folder built without it is not used.
    spec = json.dumps([course.python, list(course.requirements), PACKAGE])
    return f"{course.name}-{hashlib.sha256(spec.encode()).hexdigest()[:12]}"


def built(course: Course) -> bool:
    """Whether the course's environment was built here already."""
    return (cache_dir() / _key(course) / COMPLETE).is_file()


def for_course(course: Course) -> WorkerEnvironment:
    """The course's environment: the grader's own when it is the course's, seen through a
    view of the course's packages made for this run (`release` removes it), else the one
    built for it (`build`, once)."""
    if course.admits(platform.python_version(), own_versions()):
        view = course_view.build(course, PACKAGE, package_version())
        where = "the grader's own, with the course's packages alone"
        return WorkerEnvironment(
            sys.executable,
            (*python_paths(sys.prefix, sys.base_prefix, tuple(site_packages())), str(view.folder)),
            (str(view.folder),),
            _describe(course, platform.python_version(), view.versions, where),
            platform.python_version(),
            tuple(sorted(view.versions.items())),
            view=str(view.root),
            offered=course.offered,
        )
    folder = cache_dir() / _key(course)
    if not (folder / COMPLETE).is_file():
        build(course, folder)
    return _read(course, folder)


def _read(course: Course, folder: Path) -> WorkerEnvironment:
    python = folder / "bin" / "python"
    done = subprocess.run([python, "-I", "-c", QUERY], capture_output=True, text=True)
    if done.returncode != 0:
        raise GraderError(f"course {course.name}'s environment in {folder} does not run: "
                          f"{(done.stderr.strip().splitlines() or ['?'])[-1]}")  # fmt: skip
    found = json.loads(done.stdout)
    if not course.admits(found["python"], found["versions"]):
        raise GraderError(
            f"{folder} is not course {course.name}'s environment (Python {found['python']}, "
            f"torch {found['versions'].get('torch', 'absent')}): remove it to build it again"
        )
    site = tuple(found["site"])
    where = f"built by uv in {folder}"
    return WorkerEnvironment(
        str(python),
        python_paths(found["prefix"], found["base_prefix"], site),
        site,
        _describe(course, found["python"], found["versions"], where),
        found["python"],
        tuple(sorted(found["versions"].items())),
        own=False,
        offered=course.offered,
    )


def _uv() -> str:
    # `uv run` tells its children where it is; otherwise the PATH.
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        raise GraderError("building a course's environment needs uv (pip install uv)")
    return uv


def build(course: Course, folder: Path) -> None:
    """Build the course's environment into `folder` with uv, once whatever runs at the same
    time (a lock beside it); a GraderError says what failed, in one line."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / COMPLETE).is_file():
            return
        shutil.rmtree(folder, ignore_errors=True)
        uv = _uv()
        # From the repository's folder, where a version manager's shims (pyenv's) answer for
        # the Pythons its .python-version names; without its settings (uv.lock's torch
        # constraint is not the course's).
        steps = [
            [uv, "venv", "--no-config", "--quiet", "--python", course.python, str(folder)],
            [uv, "pip", "install", "--no-config", "--quiet", "--compile-bytecode", "--python",
             str(folder / "bin" / "python"), *course.requirements],
        ]  # fmt: skip
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, cwd=REPO_ROOT)
            if done.returncode != 0:
                shutil.rmtree(folder, ignore_errors=True)
                raise GraderError(_why(course, done.stderr))
        _write_package_metadata(folder)
        (folder / COMPLETE).write_text(json.dumps(list(course.requirements)))
        with contextlib.suppress(OSError):  # every user may read it (the sandbox's workers)
            for path in [folder, *folder.rglob("*")]:
                if path.is_dir() and not path.is_symlink():
                    path.chmod(path.stat().st_mode | 0o555)


def package_version() -> str:
    """The grader's project's version: its installed metadata's, else (the autograder's
    image installs its dependencies, not the project) its pyproject.toml's."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]


def _write_package_metadata(folder: Path) -> None:
    """`PACKAGE`'s metadata, the grader's version, in each site-packages of `folder`."""
    version = package_version()
    for site in folder.glob("lib/python*/site-packages"):
        info = site / f"{PACKAGE}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(METADATA.format(name=PACKAGE, version=version))


def _why(course: Course, stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    found = next((line for line in lines if "No interpreter found" in line), None)
    if found is not None:
        return (
            f"course {course.name} runs submissions on Python {course.python}, which uv cannot "
            f"find here: install it (uv python install {course.python}, or your system's "
            f"python{course.python})"
        )
    last = lines[-1] if lines else "(no message)"
    return f"cannot build course {course.name}'s environment ({course.describe()}): {last}"
