"""Time, memory and output limits of a graded test process, and how they are enforced.

- Per test: pytest-timeout (`--timeout-method=signal`) fails a test that runs past
  `test_timeout`; the results plugin's faulthandler watchdog ends the process at
  `hard_timeout` when the test hangs where SIGALRM cannot reach it (C code holding the GIL).
- Per submission: the grader kills the process group when `submission_timeout` (all of a
  submission's runs together) is used up.
- Memory: RLIMIT_DATA, not RLIMIT_AS. `import torch` maps ~3.2 GiB of address space (its
  CUDA build's shared libraries; CUDA itself reserves far more) but only ~0.8 GiB of data,
  and the whole suite peaks at 0.85 GiB; RLIMIT_DATA counts private writable memory
  (malloc, mmap, tensors) and not library mappings, so it bounds what a submission can
  allocate without breaking the import. An allocation past it fails in the test
  (MemoryError, or torch's "can't allocate memory"), which fails that test only.
- Output: RLIMIT_FSIZE caps every file the process writes, its captured stdout/stderr
  included. Python ignores SIGXFSZ, so a write past the cap raises OSError (EFBIG) in the
  code that made it; the grader reads back only the head and tail of the log.
- RLIMIT_CORE 0: a crashing submission must not leave a core dump of a 1 GiB process.

Defaults: 30 s per test (the slowest correct test takes 0.6 s), the watchdog at 50 s,
600 s per submission (Gradescope's default), 4 GiB of data, 64 MiB per file.
"""

from __future__ import annotations

import re
import resource
from dataclasses import dataclass

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

    @property
    def hard_timeout(self) -> float:
        """When the watchdog ends the process: pytest-timeout had its chance and some slack
        to fail the test and tear it down."""
        return 1.5 * self.test_timeout + 5.0

    def rlimits(self) -> list[tuple[int, int]]:
        """(resource, value) pairs for the child; a limit of 0 means none (memory, output)."""
        wanted = [(resource.RLIMIT_DATA, self.memory), (resource.RLIMIT_FSIZE, self.output)]
        pairs = [(which, _within_hard_limit(which, value)) for which, value in wanted if value]
        return [*pairs, (resource.RLIMIT_CORE, 0)]


def _within_hard_limit(which: int, value: int) -> int:
    # An unprivileged process cannot raise its hard limit; stay under the one it inherited.
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def apply_rlimits(rlimits: list[tuple[int, int]]) -> None:
    """Runs in the forked child before exec (subprocess's preexec_fn). It only makes
    setrlimit system calls, which take no lock another grader thread could hold."""
    for which, value in rlimits:
        resource.setrlimit(which, (value, value))
