"""The component tests: every test with a family marker in the trusted tests, collected once.

A submission's own runs also report what they collected, but a submission is imported
before collection and could change it; the list every submission is graded against comes
from a run on the bundled implementation. It is strict: a trusted test file that cannot be
collected stops the grader, where a submission's run carries on without it.
"""

from __future__ import annotations

import time
from pathlib import Path

from cs336_harness.adapter_loader import REPO_ROOT
from cs336_harness.grading.attempt import ProcessGroups, child_env, pytest_command, run_pytest
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.limits import Limits
from cs336_harness.grading.trusted import Bundle
from cs336_harness.grading.workspace import create_workspace

COLLECT_TIMEOUT = 300.0


def collect_universe(
    bundle: Bundle, root: Path, limits: Limits, groups: ProcessGroups
) -> list[tuple[str, str]]:
    """(node id, family) of every component test, in collection order."""
    # Some trusted test files import cs336_basics themselves; give them the bundled one.
    ws = create_workspace(root, bundle, REPO_ROOT)
    command = [*pytest_command(ws, limits, selected=False, collect_only=True)]
    deadline = time.monotonic() + COLLECT_TIMEOUT
    outcome = run_pytest(ws, command, child_env(ws), limits, deadline, groups)
    tests = outcome.record.collected
    if outcome.returncode != 0 or not tests:
        raise GraderError(
            f"could not collect the trusted component tests (pytest {outcome.returncode}):\n"
            + outcome.output
        )
    return tests
