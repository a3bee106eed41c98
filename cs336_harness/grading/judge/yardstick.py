"""The yardstick as the judge times it: in a process of its own, started with the worker's
interpreter (the course's Python runs the submission) and the harness alone on its path, in
the judge's cgroup and on its CPUs, which its workers share; outside the sandbox, since it
runs no code of the submission's, which therefore cannot slow it or speed it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cs336_harness.grading.sandbox import interpreter
from cs336_harness.grading.sandbox.tiers import Sandbox

MODULE = "cs336_harness.cost.yardstick"
# No bytecode: the harness it imports is the trusted bundle's, whose files are checked after
# every submission.
ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
}
# Far above its tenth of a second: a host so busy that it passes is reported as such.
TIMEOUT = 60.0


class YardstickFailed(RuntimeError):
    """The yardstick's process failed: the host's problem, never the submission's."""


def timed(sandbox: Sandbox, harness: Path) -> float:
    """The yardstick's CPU seconds (`harness` holds the `cs336_harness` package)."""
    try:
        done = subprocess.run(
            interpreter.command(MODULE, python=sandbox.python),
            env=interpreter.environment([str(harness)], ENV, ()),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=True,
        )
        return float(json.loads(done.stdout)["seconds"])
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as error:
        raise YardstickFailed(f"the yardstick could not be timed: {error}") from error
