"""Run the trusted tests once, in a subprocess, on one workspace, and say how it went.

The child is `python -S -m pytest` with its import path spelled out: the trusted copy, the
submission, then the environment's site-packages. `-S` skips `.pth` processing, so the
grader's own checkout (an editable install, holding the reference implementation) is not
importable: a submission's `import cs336_basics` finds its own package or nothing.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass, field

from cs336_harness.grading.limits import Limits, apply_rlimits
from cs336_harness.grading.record import RunRecord, read_excerpt, read_record
from cs336_harness.grading.workspace import Workspace

# Environment variables a test process may inherit; everything else is left behind (an
# exported CS336_ADAPTERS, say, must not change what is graded).
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES")


@dataclass(frozen=True)
class AttemptOutcome:
    record: RunRecord
    returncode: int
    # The grader killed the process group: the submission's time was up.
    out_of_time: bool
    # The results plugin's watchdog ended the process: a test hung past the hard timeout.
    watchdog_fired: bool
    output: str


def site_packages() -> list[str]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def child_env(ws: Workspace) -> dict[str, str]:
    env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
    path = [str(ws.trusted), str(ws.submission), *site_packages()]
    return env | {
        "PYTHONPATH": os.pathsep.join(path),
        "HOME": str(ws.scratch),
        "TMPDIR": str(ws.scratch),
        # Nothing the child imports may leave bytecode in the trusted copy or elsewhere.
        "PYTHONDONTWRITEBYTECODE": "1",
        # Unbuffered, so the output up to a crash reaches the log.
        "PYTHONUNBUFFERED": "1",
        "PYTHONHASHSEED": "0",
        # One intra-op thread: the test tensors are tiny, and OpenMP's spinning threads slow
        # down badly when processes share cores (103 tests: 1.1 s with 1 thread, 4 to 7 s
        # with 2, on 2 busy cores). Parallelism comes from grading submissions at once.
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def pytest_command(
    ws: Workspace, limits: Limits, selected: bool, collect_only: bool = False
) -> list[str]:
    """The test process's command line. `selected`: run only the node ids in `ws.select`.

    A graded run goes on past a test file that fails to import (one that imports the
    submission's cs336_basics itself, say): the tests it would have held are never started,
    and end up as errors; only the collection of the component tests (`collect_only`)
    treats that as fatal.
    """
    command = [
        sys.executable,
        "-S",
        "-m",
        "pytest",
        str(ws.trusted / "tests"),
        "-c",
        str(ws.trusted / "pytest.ini"),
        "--rootdir",
        str(ws.trusted),
        "-p",
        "cs336_harness.grading.results_plugin",
        "--grading-results",
        str(ws.results),
        "--grading-watchdog",
        str(ws.watchdog),
        f"--grading-hard-timeout={limits.hard_timeout}",
        f"--adapters={ws.adapters}",
        f"--fixtures-dir={ws.fixtures}",
        f"--timeout={limits.test_timeout}",
        "--timeout-method=signal",
        # pytest-timeout stands down under a debugger, which a submission could fake.
        "--timeout-disable-debugger-detection",
        "-p",
        "no:cacheprovider",
        "-q",
        "--tb=short",
        "--show-capture=no",
    ]
    if selected:
        command.append(f"--grading-select={ws.select}")
    command.append("--collect-only" if collect_only else "--continue-on-collection-errors")
    return command


@dataclass
class ProcessGroups:
    """The test processes running now, so that an interrupted grader can stop them all
    (they run in sessions of their own, out of reach of the terminal's Ctrl-C)."""

    live: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False

    def add(self, pid: int) -> None:
        with self.lock:
            self.live.add(pid)
            if self.closed:  # started while the grader was being stopped
                _kill_group(pid)

    def discard(self, pid: int) -> None:
        with self.lock:
            self.live.discard(pid)

    def kill_all(self) -> None:
        """Kill every live group, and any group added from now on."""
        with self.lock:
            self.closed = True
            for pid in self.live:
                _kill_group(pid)


def _kill_group(pid: int) -> None:
    """SIGKILL the test process's group: the process itself if still running, and any
    child it left behind."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def run_pytest(
    ws: Workspace,
    command: list[str],
    env: dict[str, str],
    limits: Limits,
    deadline: float,
    groups: ProcessGroups,
) -> AttemptOutcome:
    """Run `command` in `ws` until it exits or `deadline` (time.monotonic()) passes."""
    with ws.output.open("wb") as output:
        process = subprocess.Popen(
            command,
            cwd=ws.scratch,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=functools.partial(apply_rlimits, limits.rlimits()),
        )
    groups.add(process.pid)
    out_of_time = False
    try:
        process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        out_of_time = True
    finally:
        _kill_group(process.pid)
        process.wait()
        groups.discard(process.pid)
    return AttemptOutcome(
        record=read_record(ws.results),
        returncode=process.returncode,
        out_of_time=out_of_time,
        watchdog_fired=ws.watchdog.is_file() and ws.watchdog.stat().st_size > 0,
        output=read_excerpt(ws.output),
    )
