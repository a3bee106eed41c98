"""What a submission may use while it is graded (`Limits`: CPU time under wall-clock caps,
memory, output, processes) and the rlimits that enforce it in the worker
(docs/architecture.md, "Limits and the time charged")."""

from __future__ import annotations

import math
import re
import resource
from dataclasses import asdict, dataclass

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# Starting the worker (Python, torch, the harness: seconds of one core under load) before
# any submission code runs. Charged to nobody; the cap only catches a host too overloaded to
# grade, and a start that misses it is retried with the submission graded alone.
BOOT_WALL = 300.0


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
    files: int = 4096

    @property
    def call_wall(self) -> float:
        """Wall-clock cap of one call: twice its CPU limit, so that a call on a core shared
        with one other busy process still finishes, and at least 10 s more."""
        return max(2 * self.test_timeout, self.test_timeout + 10)

    @property
    def submission_wall(self) -> float:
        """Wall-clock cap of a submission's calls together (worker starts not counted)."""
        return 2 * self.submission_timeout

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
