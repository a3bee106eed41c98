"""Grade submissions: run the trusted tests on each, rerunning past crashes, lose nothing.

One submission is graded by one or more test processes. The first runs every component
test; when a process dies (segfault, abort, os._exit, the hang watchdog), its running test
is recorded as crashed or timed out and a fresh process runs the tests not yet accounted
for, until every test has a verdict, the submission's time is used up, or a run makes no
progress. A run that modified the trusted files is void: its tests are "tampered".
"""

from __future__ import annotations

import re
import tempfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from cs336_harness.grading.attempt import ProcessGroups, child_env, pytest_command, run_pytest
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.limits import Limits
from cs336_harness.grading.results import GradedTest, SubmissionResult
from cs336_harness.grading.trusted import Bundle, remove_tree
from cs336_harness.grading.universe import collect_universe
from cs336_harness.grading.verdicts import settle
from cs336_harness.grading.workspace import create_workspace

# What a submission's report keeps of its processes' output, head and tail.
OUTPUT_CHARS = 16000


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:40] or "submission"


def _cap(text: str, limit: int = OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters left out ...]\n{text[-half:]}"


class Grader:
    """Grades submissions against one bundle; safe to call from several threads at once."""

    def __init__(self, bundle: Bundle, limits: Limits, workroot: Path):
        self.bundle = bundle
        self.limits = limits
        self.workroot = workroot
        self.groups = ProcessGroups()
        self._universe: Future[list[tuple[str, str]]] = Future()
        # Collected alongside the first submission's run, which does not need it yet.
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        try:
            self._universe.set_result(
                collect_universe(self.bundle, self.workroot / "collect", self.limits, self.groups)
            )
        except BaseException as error:  # handed to whoever waits for the result
            self._universe.set_exception(error)

    def universe(self) -> list[tuple[str, str]]:
        """(node id, family) of every component test."""
        return self._universe.result()

    def stop(self) -> None:
        """Kill every test process running now or started later: grading is over."""
        self.groups.kill_all()

    def _check_bundle(self) -> None:
        problems = self.bundle.problems()
        if problems:
            raise GraderError(
                "the trusted bundle changed during grading (a submission wrote outside its "
                f"workspace?): {'; '.join(problems[:5])}"
            )

    def grade(self, name: str, path: Path) -> SubmissionResult:
        started = time.monotonic()
        deadline = started + self.limits.submission_timeout
        home = Path(tempfile.mkdtemp(prefix=f"{_slug(name)}-", dir=self.workroot))
        verdicts: dict[str, GradedTest] = {}
        outputs: list[str] = []
        select: list[str] | None = None  # None: every component test
        try:
            while True:
                if self.groups.closed:
                    raise GraderError("grading was stopped")
                self._check_bundle()
                ws = create_workspace(home / f"run{len(outputs) + 1}", self.bundle, path)
                if select is not None:
                    ws.select.write_text("\n".join(select) + "\n")
                command = pytest_command(ws, self.limits, select is not None)
                env = child_env(ws)
                outcome = run_pytest(ws, command, env, self.limits, deadline, self.groups)
                outputs.append(f"--- test process {len(outputs) + 1} ---\n{outcome.output}")
                universe = self.universe()
                asked = select if select is not None else [nodeid for nodeid, _ in universe]
                settled = settle(
                    outcome, asked, dict(universe), self.limits, self.bundle.problems(ws.bundle)
                )
                verdicts.update(settled.verdicts)
                remove_tree(ws.root)
                select = [nodeid for nodeid, _ in universe if nodeid not in verdicts]
                if settled.stop or not select:
                    break
        finally:
            remove_tree(home)
        return SubmissionResult(
            name=name,
            path=path,
            tests=tuple(verdicts[nodeid] for nodeid, _ in self.universe()),
            output=_cap("\n".join(outputs)),
            wall_time=time.monotonic() - started,
            attempts=len(outputs),
        )
