"""The course's packages alone, out of the grader's own environment: a folder of links to the
distributions the course's requirements install (theirs included), and nothing of what only
the grader uses (rich, Jinja2's report, Matplotlib, ...). The worker imports from it where
the grader's environment is the course's, so that a submission sees what the course's
environment holds, exactly as one uv builds for another course (docs/grading.md, "The
course's environment")."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.markers import UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cs336_harness.grading.environments.courses import Course

# The prefix of a view's folder, in the temp folder: every user may read it (the sandbox's
# workers run as others), and it holds links only, to files every worker reads already.
PREFIX = "cs336-grade-course-"


# The folder of links within a view's folder: named as an installation's is, so that what
# reads a path as a library's by its site-packages (`adapters.not_implemented.in_library`,
# in the worker) reads the view's as one too.
SITE = "site-packages"


@dataclass(frozen=True)
class View:
    """A course's view: its `root` (removed after the run), its `folder` of links (a
    site-packages on the worker's path), and the distributions it holds (name → version)."""

    root: Path
    versions: dict[str, str]

    @property
    def folder(self) -> Path:
        return self.root / SITE


@cache
def _installed() -> dict[str, metadata.Distribution]:
    """The grader's distributions by canonical name (read once a process)."""
    return {canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions()}


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    try:
        return any(requirement.marker.evaluate({"extra": extra}) for extra in extras or {""})
    except UndefinedEnvironmentName:
        return False


def closure(course: Course) -> dict[str, metadata.Distribution]:
    """The installed distributions the course's environment holds: its requirements, and
    what each requires in turn (markers evaluated here, with the extras asked for)."""
    installed = _installed()
    found: dict[str, metadata.Distribution] = {}
    extras: dict[str, set[str]] = {}
    todo = [Requirement(text) for text in course.requirements]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name not in installed:
            continue  # `Course.admits` says what the grader's environment lacks
        new_extras = set(requirement.extras) - extras.get(name, set())
        if name in found and not new_extras:
            continue
        extras.setdefault(name, set()).update(requirement.extras)
        found[name] = installed[name]
        for text in installed[name].requires or []:
            try:
                needed = Requirement(text)
            except InvalidRequirement:
                continue
            if _applies(needed, extras[name]):
                todo.append(needed)
    return found


def _files(distribution: metadata.Distribution) -> list[tuple[str, ...]]:
    """The paths its RECORD lists, as parts relative to its site-packages, those outside it
    (scripts in ../../../bin) left out. Read as text: `Distribution.files` builds an object
    per file (19,000 for torch's environment, a second), where only the parts are needed."""
    record = distribution.read_text("RECORD") or ""
    paths = []
    for line in record.splitlines():
        path = line.rsplit(",", 2)[0].strip('"')
        parts = tuple(part for part in path.split("/") if part)
        if parts and ".." not in parts:
            paths.append(parts)
    return paths


def _site(distribution: metadata.Distribution) -> Path:
    return Path(distribution.locate_file(""))


def _links(chosen: dict[str, metadata.Distribution]) -> dict[tuple[str, ...], Path]:
    """Each link of the view (its path's parts) and its target: a distribution's files are
    reached through the highest folder that no distribution outside `chosen` shares
    (`torch/`, but `__pycache__/typing_extensions.cpython-312.pyc` alone)."""
    outside = {
        parts[:depth]
        for name, distribution in _installed().items()
        if name not in chosen
        for parts in _files(distribution)
        for depth in range(1, len(parts))
    }
    links: dict[tuple[str, ...], Path] = {}
    for distribution in chosen.values():
        site = _site(distribution)
        for parts in _files(distribution):
            depth = next((d for d in range(1, len(parts)) if parts[:d] not in outside), len(parts))
            if parts[:depth] in links:
                continue
            target = links[parts[:depth]] = site.joinpath(*parts[:depth])
            if target.suffix == ".py":
                # A module in a shared folder: its bytecode, compiled at install, which no
                # RECORD lists.
                for compiled in target.parent.glob(f"__pycache__/{target.stem}.*.pyc"):
                    links[(*parts[: depth - 1], "__pycache__", compiled.name)] = compiled
    return links


def build(course: Course, package: str, package_version: str) -> View:
    """A new view of the course's distributions (`_links`) in a folder of the temp folder,
    which the caller removes, with `package`'s metadata (the handout's own project, whose
    `__init__.py` may ask its version)."""
    chosen = closure(course)
    root = Path(tempfile.mkdtemp(prefix=PREFIX))
    root.chmod(0o755)
    view = root / SITE
    view.mkdir()
    for parts, target in _links(chosen).items():
        path = view.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)
    info = view / f"{package}-{package_version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {package}\nVersion: {package_version}\n"
    )
    for folder, _, _ in os.walk(root):
        Path(folder).chmod(0o755)
    versions = {name: d.version for name, d in chosen.items()} | {package: package_version}
    return View(root, versions)
