"""What a submission may use while it is graded, and the resource limits that enforce it.

- Time: each adapter call gets `test_timeout` seconds, importing the adapters too; all of a
  submission's calls together get `submission_timeout`. The judge waits for the worker's
  reply with a deadline and kills the worker when it passes, so no code of the submission
  (a C loop holding the GIL included) can outlast its time. `RLIMIT_CPU` backs this up.
- Memory: `RLIMIT_DATA`, not `RLIMIT_AS`. `import torch` maps ~3.2 GiB of address space (its
  CUDA build's shared libraries) but only ~0.8 GiB of data; RLIMIT_DATA counts private
  writable memory (malloc, mmap, tensors) and not library mappings, so it bounds what a
  submission can allocate without breaking the import. An allocation past it fails in the
  call that made it (MemoryError, or torch's "can't allocate memory").
- Output: `RLIMIT_FSIZE` caps every file the worker writes, its log included, and the
  sandbox's /tmp is a tmpfs of the same size. Replies larger than `reply` bytes are refused
  before they are read.
- Processes: `RLIMIT_NPROC` (threads count) when the worker has a user id of its own,
  which it does when the grader runs as root (see `sandbox`).
- `RLIMIT_CORE` 0: a crashing submission must not leave a core dump of a 1 GiB process.

Defaults: 30 s per call (the slowest correct call takes 0.6 s), 600 s per submission
(Gradescope's default), 4 GiB of data, 64 MiB per file, 256 MiB per reply, 64 processes.
"""

from __future__ import annotations

import math
import re
import resource
from dataclasses import asdict, dataclass

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """`4G`, `512M`, `65536` → bytes (binary units; a trailing `B`/`iB` is allowed)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if match is None:
        raise ValueError(f"not a size: {text!r} (examples: 4G, 512M)")
    return int(float(match[1]) * _UNITS[match[2].upper()])


def format_size(size: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if size >= _UNITS[unit] and size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]} {unit}iB"
    return f"{size} B"


@dataclass(frozen=True)
class Limits:
    test_timeout: float = 30.0
    submission_timeout: float = 600.0
    memory: int = 4 << 30
    output: int = 64 << 20
    reply: int = 256 << 20
    processes: int = 64

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)

    def rlimits(self, own_user: bool) -> list[tuple[int, int]]:
        """(resource, value) pairs for the worker; a limit of 0 means none (memory, output).
        `own_user`: the worker runs under a user id no other process shares."""
        wanted = [
            (resource.RLIMIT_DATA, self.memory),
            (resource.RLIMIT_FSIZE, self.output),
            (resource.RLIMIT_CPU, math.ceil(self.submission_timeout) + 1),
        ]
        if own_user:
            wanted.append((resource.RLIMIT_NPROC, self.processes))
        pairs = [(which, _within_hard_limit(which, value)) for which, value in wanted if value]
        return [*pairs, (resource.RLIMIT_CORE, 0)]


def _within_hard_limit(which: int, value: int) -> int:
    # An unprivileged process cannot raise its hard limit; stay under the one it inherited.
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def apply_rlimits(rlimits: list[tuple[int, int]]) -> None:
    """Runs in the forked child before exec (subprocess's preexec_fn). It only makes
    setrlimit system calls, which take no lock another thread could hold."""
    for which, value in rlimits:
        resource.setrlimit(which, (value, value))
