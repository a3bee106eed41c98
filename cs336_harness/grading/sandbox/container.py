"""The memory limit of the container the grader runs in, and how many processes the kernel
killed under it, read (never written) from its own cgroup, so that such a kill is reported as
the host's; what grading needs of it per image (`ImageMemory`), and the worker's memory limit
that fits in it (docs/architecture.md, "Limits and the time charged"; docs/grading.md, "On
Gradescope")."""

from __future__ import annotations

from dataclasses import dataclass
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


# Gradescope's default container memory ("768 MB" in its settings, which Docker reads as MiB).
GRADESCOPE_MEMORY = 768 << 20


@dataclass(frozen=True)
class ImageMemory:
    """What grading one submission needs of a container's memory, for an image's torch:
    `trusted`, the grader's own processes at their peak beside a worker (the platform's
    entry point, the judge, its child running the tests); `worker`, the least a worker
    needs in memory (Python, torch, room for the tests' tensors; measured while its first
    optimizer still imported torch._dynamo too);
    `untouched`, what the worker's libraries map writable and never touch.

    `RLIMIT_DATA`, the worker's cap where the container's cgroup is read-only, counts every
    private writable mapping, touched or not: torch's CUDA libraries map about 480 MiB of
    them that no run touches (`import torch` alone: 770 MB of data, 270 MB of it in
    memory), so the CUDA worker's cap is raised by that much over what it may write, or it
    could not import torch at all."""

    name: str
    trusted: int
    worker: int
    untouched: int = 0

    @property
    def needed(self) -> int:
        """The least container memory that grades."""
        return self.trusted + self.worker

    def worker_cap(self, limit: int) -> int:
        """The worker's `--memory-limit` in a container of `limit` bytes: what is left
        beside the grader's processes, and what its libraries map untouched."""
        return limit - self.trusted + self.untouched

    def too_small(self, limit: int, setting: str = SETTING) -> str:
        """Why a container of `limit` bytes cannot grade, for staff, naming the `setting`
        that raises it; "" where it can."""
        if limit >= self.needed:
            return ""
        return (
            f"the container's memory ({format_size(limit)}) is below what grading with "
            f"{self.name} needs ({format_size(self.needed)}: a submission's worker "
            f"{format_size(self.worker)} beside the grader's {format_size(self.trusted)}): "
            f"raise it to at least {format_size(self.needed)} ({setting})"
        )


# Measured in the emulated Gradescope container (docs/grading.md, "In the emulation"),
# resident at their peak. The CPU-only build (torch 2.13, Python 3.11) at 768 MiB:
# run_autograder 75-83 MiB, the judge 228, its child 236-325 (much of it shared with the
# judge), the worker 356-376, its data 320-323 MiB under a cap of 368.
CPU = ImageMemory("PyTorch's CPU-only build", trusted=400 << 20, worker=320 << 20)
# PyPI's CUDA build (torch 2.11, Python 3.12) at 976 MiB: each process that imports torch
# holds about 125 MiB more of its own (the judge 274 MiB anonymous against 151, the worker
# 365 against 271: the CUDA libraries' relocated data), and the worker's data is 843 MiB, of
# which 480 are mapped and never touched. 976 MiB leaves a worker 85 MiB of data over a
# correct submission's peak, where the CPU-only build at 768 leaves 46.
CUDA = ImageMemory("PyPI's CUDA build of torch", trusted=528 << 20, worker=448 << 20,
                   untouched=480 << 20)  # fmt: skip


def for_image(cuda: bool) -> ImageMemory:
    return CUDA if cuda else CPU


def fit_memory(
    options: list[str], limit: int | None, setting: str = SETTING, needs: ImageMemory = CPU
) -> list[str] | str:
    """`options` with the worker's memory limit lowered to fit in a container of `limit`
    bytes beside the grader's own processes (`needs`: the image's), so that a submission
    that allocates too much fails in its own call rather than getting a process of the
    grader killed; a message for staff instead when the container is too small to grade in
    at all, naming the `setting` that raises it."""
    if limit is None:
        return options
    too_small = needs.too_small(limit, setting)
    if too_small:
        return too_small
    sizes = [o.split("=", 1)[1] for o in options if o.startswith("--memory-limit=")]
    asked = parse_size(sizes[-1]) if sizes else 0
    cap = needs.worker_cap(limit)
    if asked and asked <= cap:
        return options
    return [*options, f"--memory-limit={cap}"]
