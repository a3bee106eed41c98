"""One graded run's private directory: trusted copies, the submission's code, its records.

<root>/bundle/trusted/     harness package and test files (read-only)
<root>/bundle/fixtures/    reference fixtures (read-only)
<root>/submission/         the submission's cs336_basics/ and tests/adapters.py only
<root>/scratch/            working directory, HOME and TMPDIR of the test process
<root>/results.jsonl       the results plugin's record
<root>/output.log          stdout and stderr of the test process
<root>/watchdog.log        the hard watchdog's traceback, when it fires
<root>/select.txt          node ids to run, on a rerun after a crash
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.grading.trusted import DEBRIS, Bundle, set_read_only


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def bundle(self) -> Path:
        return self.root / "bundle"

    @property
    def trusted(self) -> Path:
        return self.bundle / "trusted"

    @property
    def fixtures(self) -> Path:
        return self.bundle / "fixtures"

    @property
    def submission(self) -> Path:
        return self.root / "submission"

    @property
    def adapters(self) -> Path:
        return self.submission / "tests" / "adapters.py"

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def output(self) -> Path:
        return self.root / "output.log"

    @property
    def watchdog(self) -> Path:
        return self.root / "watchdog.log"

    @property
    def select(self) -> Path:
        return self.root / "select.txt"


def copy_submission(source: Path, dest: Path) -> None:
    """Copy what a submission contributes: its package and its adapters file, if present.

    Anything else it holds (its own tests, fixtures, conftest) is never used. A part it
    lacks stays absent, so importing it fails in the test process as it would for a student.
    """
    dest.mkdir(parents=True)
    package = source / "cs336_basics"
    if package.is_dir():
        shutil.copytree(package, dest / "cs336_basics", ignore=shutil.ignore_patterns(*DEBRIS))
    adapters = source / "tests" / "adapters.py"
    if adapters.is_file():
        (dest / "tests").mkdir()
        shutil.copyfile(adapters, dest / "tests" / "adapters.py")


def create_workspace(root: Path, bundle: Bundle, submission: Path) -> Workspace:
    """A fresh workspace at `root` holding copies of `bundle` and `submission`."""
    ws = Workspace(root)
    root.mkdir(parents=True)
    shutil.copytree(bundle.root, ws.bundle)
    set_read_only(ws.bundle)
    copy_submission(submission, ws.submission)
    ws.scratch.mkdir()
    return ws
