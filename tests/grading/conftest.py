"""Run the grader as its users do, `python -m cs336_harness.grading ...`, and read its reports."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cs336_harness.adapter_loader import REPO_ROOT
from tests.grading import synthetic

# Short, so that hanging submissions cost seconds, yet long enough for the slowest test on
# two busy cores (the first failed comparison imports torch.distributed, ~4 s).
TEST_TIMEOUT = 8
MEMORY_LIMIT = "2G"
FAIL_UNDER = 50


@dataclass
class GradingRun:
    returncode: int
    stdout: str
    stderr: str
    out: Path

    def results(self, name: str | None = None) -> dict[str, Any]:
        path = self.out / name / "results.json" if name else self.out / "results.json"
        return json.loads(path.read_text())

    def summary(self) -> dict[str, dict[str, str]]:
        with (self.out / "summary.csv").open() as f:
            return {row["submission"]: row for row in csv.DictReader(f)}

    def junit(self) -> ET.Element:
        return ET.parse(self.out / "junit.xml").getroot()


def grade(*args: str | Path, out: Path, cwd: Path = REPO_ROOT) -> GradingRun:
    command = [sys.executable, "-m", "cs336_harness.grading", *map(str, args), "--out", str(out)]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    return GradingRun(done.returncode, done.stdout, done.stderr, out)


def statuses(results: dict[str, Any]) -> dict[str, str]:
    """Node id → the grader's verdict, from a results.json."""
    return {t["extra_data"]["nodeid"]: t["extra_data"]["status"] for t in results["tests"]}


def family_statuses(results: dict[str, Any], family: str) -> set[str]:
    return {
        t["extra_data"]["status"] for t in results["tests"] if t["extra_data"]["family"] == family
    }


HOSTILE = {
    "correct": synthetic.CORRECT,
    "wrong_softmax": synthetic.WRONG_SOFTMAX,
    "not_implemented": synthetic.NOT_IMPLEMENTED,
    "hangs": synthetic.HANGS,
    "crashes": synthetic.CRASHES,
    "exit_at_import": synthetic.EXIT_AT_IMPORT,
    "hangs_at_import": synthetic.HANGS_AT_IMPORT,
    "hard_exit_at_import": synthetic.HARD_EXIT_AT_IMPORT,
    "import_error": synthetic.IMPORT_ERROR,
    "loud": synthetic.LOUD,
    "memory_hog": synthetic.MEMORY_HOG,
    "tampers": synthetic.TAMPERS,
    "cheats": synthetic.CHEATS,
}


@pytest.fixture(scope="session")
def hostile_batch(tmp_path_factory: pytest.TempPathFactory) -> GradingRun:
    """Every synthetic submission graded in one run, two at a time, on the stored fixtures."""
    root = tmp_path_factory.mktemp("hostile")
    for name, submission in HOSTILE.items():
        synthetic.write_submission(root / "submissions" / name, submission)
    return grade(
        root / "submissions",
        "-j2",
        f"--test-timeout={TEST_TIMEOUT}",
        f"--memory-limit={MEMORY_LIMIT}",
        f"--fail-under={FAIL_UNDER}",
        out=root / "out",
    )
