"""The memory limit of the container the grader runs in, and how many processes the kernel
killed under it, read (never written) from its own cgroup, so that such a kill is reported as
the host's; and the worker's memory limit that fits in it (docs/architecture.md, "Limits and
the time charged")."""

from __future__ import annotations

from pathlib import Path

from cs336_harness.grading.sandbox.limits import format_size, parse_size

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


# What the grader's own processes hold at their peak in a platform's container, beside the
# worker: the grader (~55 MB), the judge (~230 MB) and the child running the tests (~230 MB,
# much of it shared with the judge), as measured at 768 MB, CPU-only torch 2.13, Python 3.11;
# see docs/grading.md. A worker's data memory is capped to leave them this much.
TRUSTED_MEMORY = 400 << 20
# The least a worker needs: Python, torch and torch._dynamo (~300 MB of data), and room for
# the tests' tensors.
WORKER_MEMORY = 320 << 20


def fit_memory(options: list[str], limit: int | None, setting: str = SETTING) -> list[str] | str:
    """`options` with the worker's memory limit lowered to fit in a container of `limit`
    bytes beside the grader's own processes, so that a submission that allocates too much
    fails in its own call rather than getting a process of the grader killed; a message for
    staff instead when the container is too small to grade in at all, naming the `setting`
    that raises it."""
    if limit is None:
        return options
    sizes = [o.split("=", 1)[1] for o in options if o.startswith("--memory-limit=")]
    asked = parse_size(sizes[-1]) if sizes else 0
    room = limit - TRUSTED_MEMORY
    if room < WORKER_MEMORY:
        return (
            f"the container's memory limit ({format_size(limit)}) is too small to grade: a "
            f"submission's worker needs {format_size(WORKER_MEMORY)} beside the grader's "
            f"{format_size(TRUSTED_MEMORY)}; raise it to at least "
            f"{format_size(WORKER_MEMORY + TRUSTED_MEMORY)} ({setting})"
        )
    if asked and asked <= room:
        return options
    return [*options, f"--memory-limit={room}"]
