"""The memory limit of the container the grader runs in, and how many processes the kernel
killed under it, read (never written) from its own cgroup, so that such a kill is reported as
the host's (docs/architecture.md, "Limits and the time charged")."""

from __future__ import annotations

from pathlib import Path

from cs336_harness.grading.sandbox.limits import format_size

ROOT = Path("/sys/fs/cgroup")
SELF = Path("/proc/self/cgroup")
# What raises the limit on Gradescope; elsewhere, whatever set the container's memory.
SETTING = "Gradescope: the assignment's Autograder settings, container memory"


def _group(controller: str) -> Path | None:
    """This process's cgroup directory: the v1 `controller` hierarchy's, else v2's."""
    try:
        lines = SELF.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return ROOT / controller / path.lstrip("/")
    for line in lines:
        if line.startswith("0::"):
            return ROOT / line[3:].lstrip("/")
    return None


def _read(name_v1: str, name_v2: str) -> str | None:
    group = _group("memory")
    if group is None:
        return None
    for name in (name_v1, name_v2):
        try:
            return (group / name).read_text()
        except OSError:
            continue
    return None


def memory_limit() -> int | None:
    """The container's memory limit in bytes; None where there is none, or none to read."""
    text = _read("memory.limit_in_bytes", "memory.max")
    if text is None or text.strip() == "max":
        return None
    limit = int(text)
    return None if limit >= 1 << 60 else limit  # v1 says "no limit" with a huge number


def oom_kills() -> int:
    """How many processes the kernel has killed for the container's memory limit so far."""
    text = _read("memory.oom_control", "memory.events") or ""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


def too_small(limit: int | None) -> str:
    """What to tell staff when the kernel killed a process for the container's memory."""
    if limit is None:
        return "the host ran out of memory: grade with more"
    size = format_size(limit)
    return f"the container's memory limit ({size}) is too small to grade: raise it ({SETTING})"
