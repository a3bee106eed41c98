"""Fresh inputs: a fixture directory drawn for a new seed, with the oracle's expected outputs.

Built once per grading run and shared by every submission, so a submission that returns the
stored expected outputs of the committed fixtures earns nothing. The generator runs in a
subprocess: it imports torch and the oracle, which the grader process itself never needs.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from cs336_harness.grading.errors import GraderError

GENERATOR = "cs336_harness.fixturegen"


def fresh_fixtures(seed: int, dest: Path) -> Path:
    if importlib.util.find_spec(GENERATOR) is None:
        raise GraderError(
            "--fresh-inputs needs the fixture generator and the oracle, which this copy "
            "(a student handout?) does not have"
        )
    command = [sys.executable, "-m", GENERATOR, "--seed", str(seed), "--out", str(dest)]
    done = subprocess.run([*command, "--quiet"], capture_output=True, text=True)
    if done.returncode != 0:
        raise GraderError(f"the fixture generator failed (seed {seed}):\n{done.stderr[-4000:]}")
    return dest
